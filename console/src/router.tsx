import { createRootRoute, createRoute, createRouter, redirect } from '@tanstack/react-router';
import { ComingSoon } from './coming-soon.js';
import { parseFilter, parsePage } from './format.js';
import { Layout } from './layout.js';
import { SessionGate } from './session.js';
import { AgentsView, type AgentsSearch } from './views/agents.js';
import { ApiKeysView, type KeysSearch } from './views/api-keys.js';
import { PlanDetailView, PlansView, type PlanSearch, type PlansSearch } from './views/plans.js';
import { RunDetailView, type RunSearch } from './views/run-detail.js';
import { RunsView, type RunsSearch } from './views/runs.js';
import { parseRunsSearch } from './run-search.js';

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

const runsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'runs',
  validateSearch: (search: Record<string, unknown>): RunsSearch => parseRunsSearch(search),
  component: function Runs() {
    return <RunsView search={runsRoute.useSearch()} />;
  },
});

const runRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'runs/$runId',
  validateSearch: (search: Record<string, unknown>): RunSearch => ({
    events: search.events === undefined ? undefined : parsePage(search.events),
  }),
  component: function RunDetail() {
    return <RunDetailView runId={runRoute.useParams().runId} search={runRoute.useSearch()} />;
  },
});

const plansRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'plans',
  validateSearch: (search: Record<string, unknown>): PlansSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function Plans() {
    return <PlansView search={plansRoute.useSearch()} />;
  },
});

const planRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'plans/$planId',
  validateSearch: (search: Record<string, unknown>): PlanSearch => ({
    version: search.version === undefined ? undefined : parsePage(search.version),
  }),
  component: function PlanDetail() {
    return <PlanDetailView planId={planRoute.useParams().planId} search={planRoute.useSearch()} />;
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
  placeholder('/', 'Overview'),
  placeholder('approvals', 'Approvals'),
  runsRoute,
  runRoute,
  plansRoute,
  planRoute,
  agentsRoute,
  placeholder('routines', 'Routines'),
  placeholder('tasks', 'Tasks'),
  placeholder('artifacts', 'Artifacts'),
  settingsRoute.addChildren([keysRoute]),
]);

export const router = createRouter({ routeTree, basepath: '/console' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
