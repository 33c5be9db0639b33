import { createRootRoute, createRoute, createRouter, redirect } from '@tanstack/react-router';
import { ComingSoon } from './coming-soon.js';
import { parseFilter, parsePage } from './format.js';
import { Layout } from './layout.js';
import { SessionGate } from './session.js';
import { AgentDetailView, type AgentSearch } from './views/agent-detail.js';
import { AgentsView, type AgentsSearch } from './views/agents.js';
import { ApiKeysView, type KeysSearch } from './views/api-keys.js';
import { TaskDetailView, type TaskSearch } from './views/task-detail.js';
import { parseStatuses } from './views/task-statuses.js';
import { BoardView, ProjectsView, type BoardSearch, type ProjectsSearch } from './views/tasks.js';

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

const optionalPage = (value: unknown) => (value === undefined ? undefined : parsePage(value));

const agentRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'agents/$agentId',
  validateSearch: (search: Record<string, unknown>): AgentSearch => ({
    pending: optionalPage(search.pending),
    leased: optionalPage(search.leased),
    dead: optionalPage(search.dead),
  }),
  component: function Agent() {
    return <AgentDetailView agentId={agentRoute.useParams().agentId} />;
  },
});

const projectsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'tasks',
  validateSearch: (search: Record<string, unknown>): ProjectsSearch => ({ page: optionalPage(search.page) }),
  component: function Projects() {
    return <ProjectsView search={projectsRoute.useSearch()} />;
  },
});

const boardRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'tasks/projects/$projectId',
  validateSearch: (search: Record<string, unknown>): BoardSearch => ({ statuses: parseStatuses(search.statuses) }),
  component: function Board() {
    return <BoardView projectId={boardRoute.useParams().projectId} search={boardRoute.useSearch()} />;
  },
});

const taskRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'tasks/$taskId',
  validateSearch: (search: Record<string, unknown>): TaskSearch => ({ comments: optionalPage(search.comments), activity: optionalPage(search.activity) }),
  component: function TaskDetail() {
    return <TaskDetailView taskId={taskRoute.useParams().taskId} />;
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
  placeholder('runs', 'Runs'),
  placeholder('plans', 'Plans'),
  agentsRoute,
  agentRoute,
  placeholder('routines', 'Routines'),
  projectsRoute,
  boardRoute,
  taskRoute,
  placeholder('artifacts', 'Artifacts'),
  settingsRoute.addChildren([keysRoute]),
]);

export const router = createRouter({ routeTree, basepath: '/console' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
