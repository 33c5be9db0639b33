import { Link, Outlet } from '@tanstack/react-router';
import { ErrorNotice } from './errors.js';
import { useLiveStatus, type LiveState } from './live.js';
import { useSession } from './session.js';

const NAV = [
  { to: '/', label: 'Overview' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/runs', label: 'Runs' },
  { to: '/plans', label: 'Plans' },
  { to: '/agents', label: 'Agents' },
  { to: '/routines', label: 'Routines' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/artifacts', label: 'Artifacts' },
  { to: '/settings', label: 'Settings' },
] as const;

/** The frame of every signed-in page: the nav, who is signed in, sign-out, and the view. */
export function Layout() {
  const { whoami, signOut } = useSession();
  const live = useLiveStatus();
  return (
    <div className="layout">
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="sidebar">
        <Link to="/" className="brand">
          Switchboard
        </Link>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} activeOptions={{ exact: item.to === '/' }}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          <LiveIndicator live={live} />
          <span title={whoami.key_id ?? undefined}>
            {whoami.role === 'admin' ? 'admin' : `agent ${whoami.agent_id}`}
          </span>
          <button type="button" className="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        {live.state === 'stopped' && (
          <>
            <p className="notice">Live updates stopped: reload the page to see changes.</p>
            <ErrorNotice error={live.error} />
          </>
        )}
        <Outlet />
      </main>
    </div>
  );
}

const LIVE_LABELS: Record<LiveState['state'], string> = { connecting: 'Connecting…', live: 'Live', stopped: 'Not live' };

/** Whether the views follow the event stream (a reopening after a drop shows as live: the SDK resumes it). */
function LiveIndicator({ live }: { live: LiveState }) {
  return (
    <span className={`live-status live-${live.state}`} data-live={live.state} title="Live updates through the event stream">
      {LIVE_LABELS[live.state]}
    </span>
  );
}
