import { Link, Navigate, Outlet, useRouterState } from '@tanstack/react-router';
import { useSession, type Session } from '../session.js';
import './settings.css';

/** The settings tabs, each shown to the principals it serves (the server refuses the others anyway). */
const TABS = [
  { to: '/settings/keys', label: 'API keys', needs: 'the keys:admin permission', allowed: (session: Session) => session.can('keys:admin') },
  { to: '/settings/users', label: 'Users', needs: 'the users:admin permission', allowed: (session: Session) => session.can('users:admin') },
  {
    to: '/settings/webhooks',
    label: 'Webhooks',
    needs: 'the webhooks:admin permission',
    allowed: (session: Session) => session.can('webhooks:admin'),
  },
  {
    to: '/settings/notification-channels',
    label: 'Notification channels',
    needs: 'the webhooks:admin permission',
    allowed: (session: Session) => session.can('webhooks:admin'),
  },
  {
    to: '/settings/alert-rules',
    label: 'Alert rules',
    needs: 'the webhooks:admin permission',
    allowed: (session: Session) => session.can('webhooks:admin'),
  },
  {
    to: '/settings/budgets',
    label: 'Budgets',
    needs: 'the budgets:admin permission',
    allowed: (session: Session) => session.can('budgets:admin'),
  },
  {
    to: '/settings/my-keys',
    label: 'Your keys',
    needs: "a person's sign-in",
    allowed: (session: Session) => session.whoami.kind === 'user',
  },
] as const;

/** Settings: the tabs this principal may use above the chosen one; `/settings` opens the first. */
export function SettingsLayout() {
  const session = useSession();
  const pathname = useRouterState({ select: (state) => state.location.pathname });
  const tabs = TABS.filter((tab) => tab.allowed(session));
  // With or without the /console base: either way the tab path is inside it.
  const current = TABS.find((tab) => pathname.includes(tab.to));
  if (tabs.length === 0 || (current && !tabs.includes(current))) {
    return (
      <section>
        <h1>Settings</h1>
        <p className="notice">
          {current
            ? `${current.label} needs ${current.needs}, which this sign-in (${session.whoami.role}) lacks.`
            : `Nothing here for this sign-in (${session.whoami.role}): ${TABS.map((tab) => `${tab.label} needs ${tab.needs}`).join('; ')}.`}
        </p>
      </section>
    );
  }
  // Only `/settings` itself opens the first tab: while the router leaves settings for another
  // view, this layout still renders once with that view's path, which must not bring it back.
  if (!current) return /\/settings\/?$/.test(pathname) ? <Navigate to={tabs[0]!.to} replace /> : null;
  return (
    <>
      <nav className="tabs" aria-label="Settings">
        <ul>
          {tabs.map((tab) => (
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
