import { Link, Outlet } from '@tanstack/react-router';
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
          <span title={whoami.key_id ?? undefined}>
            {whoami.role === 'admin' ? 'admin' : `agent ${whoami.agent_id}`}
          </span>
          <button type="button" className="secondary" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <main id="content" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}
