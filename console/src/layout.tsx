import { Link, Outlet, type LinkProps } from '@tanstack/react-router';
import type { Result } from '../../src/client/browser.js';
import { ErrorNotice } from './errors.js';
import { useLiveStatus, type LiveState } from './live.js';
import type { Permission } from './permission.js';
import { useSession } from './session.js';
import { GlobalPauseBanner } from './usage/pauses.js';

/** The views, each shown to the principals it serves (`needs`: a permission beyond reading what every role reads). */
const NAV: ReadonlyArray<{ to: LinkProps['to'] & string; label: string; needs?: Permission }> = [
  { to: '/', label: 'Overview' },
  { to: '/approvals', label: 'Approvals' },
  { to: '/runs', label: 'Runs' },
  { to: '/plans', label: 'Plans' },
  { to: '/triggers', label: 'Triggers' },
  { to: '/agents', label: 'Agents' },
  { to: '/dead-letters', label: 'Dead letters' },
  { to: '/routines', label: 'Routines' },
  { to: '/tasks', label: 'Tasks' },
  { to: '/artifacts', label: 'Artifacts' },
  { to: '/usage', label: 'Usage', needs: 'usage:read' },
  { to: '/alerts', label: 'Alerts', needs: 'events:read' },
  { to: '/audit', label: 'Audit log', needs: 'audit:read' },
  { to: '/settings', label: 'Settings' },
];

/** The frame of every signed-in page: the nav, who is signed in, sign-out, and the view. */
export function Layout() {
  const { whoami, can, signOut } = useSession();
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
            {NAV.filter((item) => item.needs === undefined || can(item.needs)).map((item) => (
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
          <span className="principal" title={whoami.key_id ? `through key ${whoami.key_id}` : undefined} data-testid="principal">
            {principalLabel(whoami)}
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
        {live.state === 'reconnecting' && (
          <p className="notice" role="status">
            The server cannot be reached: what is shown may be out of date. Reconnecting…; the views reload by themselves once it is back.
          </p>
        )}
        <GlobalPauseBanner />
        <Outlet />
      </main>
    </div>
  );
}

/** Who is signed in, as a person reads it: a user by name with their role, else the key's kind. */
function principalLabel(whoami: Result<'auth.whoami'>): string {
  if (whoami.kind === 'user') return `${whoami.username} (${whoami.role})`;
  if (whoami.kind === 'agent') return `agent ${whoami.agent_id}`;
  return whoami.kind === 'admin' ? 'admin' : `${whoami.role} key`;
}

const LIVE_LABELS: Record<LiveState['state'], string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  stopped: 'Not live',
};

/** Whether the views follow the event stream: "Live" only while it is open. */
function LiveIndicator({ live }: { live: LiveState }) {
  return (
    <span
      className={`live-status live-${live.state}`}
      data-live={live.state}
      data-testid="live-status"
      title="Live updates through the event stream"
    >
      {LIVE_LABELS[live.state]}
    </span>
  );
}
