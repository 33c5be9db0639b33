import { createRootRoute, createRoute, createRouter, redirect } from '@tanstack/react-router';
import { ComingSoon } from './coming-soon.js';
import { parseFilter, parsePage } from './format.js';
import { Layout } from './layout.js';
import { SessionGate } from './session.js';
import { AgentsView, type AgentsSearch } from './views/agents.js';
import { ArtifactDetailView, type ArtifactSearch } from './views/artifact-detail.js';
import { ArtifactsView, type ArtifactsSearch } from './views/artifacts.js';
import { ApiKeysView, type KeysSearch } from './views/api-keys.js';
import { OverviewView } from './views/overview.js';
import { NewRoutineView, RoutinesView, RoutineView, type RoutineSearch, type RoutinesSearch } from './views/routines.js';

const rootRoute = createRootRoute({
  component: () => (
    <SessionGate>
      <Layout />
    </SessionGate>
  ),
  notFoundComponent: () => <ComingSoon title="Not found" />,
});

/** A view of issue 23 still to build: a route of its own, so its link and deep links work already. */
const placeholder = <const Path extends string>(path: Path, title: string) =>
  createRoute({ getParentRoute: () => rootRoute, path, component: () => <ComingSoon title={title} /> });

const agentsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'agents',
  validateSearch: (search: Record<string, unknown>): AgentsSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    capability: parseFilter(search.capability),
    group: parseFilter(search.group),
  }),
  component: function Agents() {
    return <AgentsView search={agentsRoute.useSearch()} />;
  },
});

const overviewRoute = createRoute({ getParentRoute: () => rootRoute, path: '/', component: OverviewView });

const routinesRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'routines',
  validateSearch: (search: Record<string, unknown>): RoutinesSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    state: search.state === 'enabled' || search.state === 'paused' ? search.state : undefined,
    trigger: search.trigger === 'cron' || search.trigger === 'webhook' ? search.trigger : undefined,
  }),
  component: function Routines() {
    return <RoutinesView search={routinesRoute.useSearch()} />;
  },
});

const newRoutineRoute = createRoute({ getParentRoute: () => rootRoute, path: 'routines/new', component: NewRoutineView });

const routineRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'routines/$routineId',
  validateSearch: (search: Record<string, unknown>): RoutineSearch => ({ page: search.page === undefined ? undefined : parsePage(search.page) }),
  component: function Routine() {
    return <RoutineView routineId={routineRoute.useParams().routineId} search={routineRoute.useSearch()} />;
  },
});

const artifactsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'artifacts',
  validateSearch: (search: Record<string, unknown>): ArtifactsSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    type: parseFilter(search.type),
    metadata: parseFilter(search.metadata),
  }),
  component: function Artifacts() {
    return <ArtifactsView search={artifactsRoute.useSearch()} />;
  },
});

const artifactRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'artifacts/$artifactId',
  validateSearch: (search: Record<string, unknown>): ArtifactSearch => ({
    version: search.version === undefined ? undefined : parsePage(search.version),
  }),
  component: function Artifact() {
    return <ArtifactDetailView artifactId={artifactRoute.useParams().artifactId} search={artifactRoute.useSearch()} />;
  },
});

const settingsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'settings',
  beforeLoad: ({ location }) => {
    if (location.pathname.replace(/\/$/, '').endsWith('/settings')) throw redirect({ to: '/settings/keys' });
  },
});

const keysRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'keys',
  validateSearch: (search: Record<string, unknown>): KeysSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    revoked: search.revoked === true || search.revoked === 'true' ? true : undefined,
  }),
  component: function Keys() {
    return <ApiKeysView search={keysRoute.useSearch()} />;
  },
});

const routeTree = rootRoute.addChildren([
  overviewRoute,
  placeholder('approvals', 'Approvals'),
  placeholder('runs', 'Runs'),
  placeholder('plans', 'Plans'),
  agentsRoute,
  routinesRoute,
  newRoutineRoute,
  routineRoute,
  placeholder('tasks', 'Tasks'),
  artifactsRoute,
  artifactRoute,
  settingsRoute.addChildren([keysRoute]),
]);

export const router = createRouter({ routeTree, basepath: '/console' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
