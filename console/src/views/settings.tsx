import { Link, Outlet } from '@tanstack/react-router';
import { useSession } from '../session.js';
import './settings.css';

const TABS = [
  { to: '/settings/keys', label: 'API keys' },
  { to: '/settings/webhooks', label: 'Webhooks' },
] as const;

/** Settings (admin): its tabs above the chosen one. */
export function SettingsLayout() {
  const { whoami } = useSession();
  if (whoami.role !== 'admin') {
    return (
      <section>
        <h1>Settings</h1>
        <p className="notice">Only an admin manages API keys and webhooks: sign in with an admin key.</p>
      </section>
    );
  }
  return (
    <>
      <nav className="tabs" aria-label="Settings">
        <ul>
          {TABS.map((tab) => (
            <li key={tab.to}>
              <Link to={tab.to}>{tab.label}</Link>
            </li>
          ))}
        </ul>
      </nav>
      <Outlet />
    </>
  );
}
