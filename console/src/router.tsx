import { createRootRoute, createRoute, createRouter, Outlet, useRouterState } from '@tanstack/react-router';
import { parseFilter, parseJsonFilter, parsePage } from './format.js';
import { Layout } from './layout.js';
import { NotFound } from './not-found.js';
import { SessionGate } from './session.js';
import { AgentDetailView, type AgentSearch } from './agents/agent-detail.js';
import { AgentsView, type AgentsSearch } from './agents/agents.js';
import { ApprovalLinkPage } from './approvals/approval-link.js';
import { ApprovalsView, type ApprovalsSearch } from './approvals/approvals.js';
import { ArtifactDetailView, type ArtifactSearch } from './artifacts/artifact-detail.js';
import { ArtifactsView, type ArtifactsSearch } from './artifacts/artifacts.js';
import { ApiKeysView, OwnKeysView, type KeysSearch } from './settings/api-keys.js';
import { UsersView, type UsersSearch } from './settings/users.js';
import { TaskDetailView, type TaskSearch } from './tasks/task-detail.js';
import { parseStatuses } from './tasks/task-statuses.js';
import { BoardView, ProjectsView, type BoardSearch, type ProjectsSearch } from './tasks/tasks.js';
import { OverviewView } from './overview/overview.js';
import { NewRoutineView, RoutinesView, RoutineView, type RoutineSearch, type RoutinesSearch } from './routines/routines.js';
import { DeadLettersView, type DeadLettersSearch } from './agents/dead-letters.js';
import { SettingsLayout } from './settings/settings.js';
import { TriggersView, type TriggersSearch } from './triggers/triggers.js';
import { DELIVERY_STATUSES, WebhookDeliveriesView, type DeliveriesSearch } from './settings/webhook-deliveries.js';
import { WebhooksView, type WebhooksSearch } from './settings/webhooks.js';
import { PlanDetailView, PlansView, type PlanSearch, type PlansSearch } from './plans/plans.js';
import { RunDetailView, type RunSearch } from './runs/run-detail.js';
import { RunsView, type RunsSearch } from './runs/runs.js';
import { parseRunsSearch } from './runs/run-search.js';
import { parseAuditSearch } from './audit/audit-search.js';
import { AuditView, type AuditSearch } from './audit/audit.js';
import { ALERT_STATES, AlertsView, type AlertsSearch } from './alerts/alerts.js';
import { ChannelsView } from './alerts/channels.js';
import { RulesView } from './alerts/rules.js';
import { BudgetsView } from './usage/budgets.js';
import { USAGE_DAYS, USAGE_GROUPS, UsageView, type UsageSearch } from './usage/usage.js';

const rootRoute = createRootRoute({
  component: function Root() {
    // An approval link's page is public: no sign-in, no session, no nav.
    const signedOut = useRouterState({ select: (state) => state.matches.some((match) => match.routeId === approvalLinkRoute.id) });
    return signedOut ? (
      <Outlet />
    ) : (
      <SessionGate>
        <Layout />
      </SessionGate>
    );
  },
  notFoundComponent: NotFound,
});

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
  validateSearch: (search: Record<string, unknown>): TaskSearch => ({
    comments: optionalPage(search.comments),
    activity: optionalPage(search.activity),
  }),
  component: function TaskDetail() {
    return <TaskDetailView taskId={taskRoute.useParams().taskId} />;
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

const deadLettersRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'dead-letters',
  validateSearch: (search: Record<string, unknown>): DeadLettersSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function DeadLetters() {
    return <DeadLettersView search={deadLettersRoute.useSearch()} />;
  },
});

const triggersRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'triggers',
  validateSearch: (search: Record<string, unknown>): TriggersSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function Triggers() {
    return <TriggersView search={triggersRoute.useSearch()} />;
  },
});

const newRoutineRoute = createRoute({ getParentRoute: () => rootRoute, path: 'routines/new', component: NewRoutineView });

const routineRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'routines/$routineId',
  validateSearch: (search: Record<string, unknown>): RoutineSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function Routine() {
    return <RoutineView routineId={routineRoute.useParams().routineId} search={routineRoute.useSearch()} />;
  },
});

const approvalsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'approvals',
  validateSearch: (search: Record<string, unknown>): ApprovalsSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function Approvals() {
    return <ApprovalsView search={approvalsRoute.useSearch()} />;
  },
});

const approvalLinkRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'approve/$token',
  component: function ApprovalLink() {
    return <ApprovalLinkPage token={approvalLinkRoute.useParams().token} />;
  },
});

const artifactsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'artifacts',
  validateSearch: (search: Record<string, unknown>): ArtifactsSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    type: parseFilter(search.type),
    metadata: parseJsonFilter(search.metadata),
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

const auditRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'audit',
  validateSearch: (search: Record<string, unknown>): AuditSearch => parseAuditSearch(search),
  component: function Audit() {
    return <AuditView search={auditRoute.useSearch()} />;
  },
});

const alertsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'alerts',
  validateSearch: (search: Record<string, unknown>): AlertsSearch => ({
    page: optionalPage(search.page),
    state: ALERT_STATES.find((state) => state === search.state),
  }),
  component: function Alerts() {
    return <AlertsView search={alertsRoute.useSearch()} />;
  },
});

const usageRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'usage',
  validateSearch: (search: Record<string, unknown>): UsageSearch => ({
    group: USAGE_GROUPS.find((group) => group === search.group),
    days: USAGE_DAYS.find((days) => days === Number(search.days)),
  }),
  component: function Usage() {
    return <UsageView search={usageRoute.useSearch()} />;
  },
});

const settingsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'settings',
  component: SettingsLayout,
});

const keysSearch = (search: Record<string, unknown>): KeysSearch => ({
  page: optionalPage(search.page),
  revoked: search.revoked === true || search.revoked === 'true' ? true : undefined,
});

const keysRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'keys',
  validateSearch: keysSearch,
  component: function Keys() {
    return <ApiKeysView search={keysRoute.useSearch()} />;
  },
});

const ownKeysRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'my-keys',
  validateSearch: keysSearch,
  component: function OwnKeys() {
    return <OwnKeysView search={ownKeysRoute.useSearch()} />;
  },
});

const usersRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'users',
  validateSearch: (search: Record<string, unknown>): UsersSearch => ({ page: optionalPage(search.page) }),
  component: function Users() {
    return <UsersView search={usersRoute.useSearch()} />;
  },
});

const webhooksRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'webhooks',
  validateSearch: (search: Record<string, unknown>): WebhooksSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
  }),
  component: function Webhooks() {
    return <WebhooksView search={webhooksRoute.useSearch()} />;
  },
});

const webhookRoute = createRoute({
  getParentRoute: () => settingsRoute,
  path: 'webhooks/$webhookId',
  validateSearch: (search: Record<string, unknown>): DeliveriesSearch => ({
    page: search.page === undefined ? undefined : parsePage(search.page),
    status: DELIVERY_STATUSES.find((status) => status === search.status),
  }),
  component: function Webhook() {
    return <WebhookDeliveriesView webhookId={webhookRoute.useParams().webhookId} search={webhookRoute.useSearch()} />;
  },
});

const channelsRoute = createRoute({ getParentRoute: () => settingsRoute, path: 'notification-channels', component: ChannelsView });
const rulesRoute = createRoute({ getParentRoute: () => settingsRoute, path: 'alert-rules', component: RulesView });
const budgetsRoute = createRoute({ getParentRoute: () => settingsRoute, path: 'budgets', component: BudgetsView });

const routeTree = rootRoute.addChildren([
  overviewRoute,
  approvalsRoute,
  approvalLinkRoute,
  runsRoute,
  runRoute,
  plansRoute,
  planRoute,
  agentsRoute,
  agentRoute,
  deadLettersRoute,
  routinesRoute,
  newRoutineRoute,
  routineRoute,
  triggersRoute,
  projectsRoute,
  boardRoute,
  taskRoute,
  artifactsRoute,
  artifactRoute,
  auditRoute,
  alertsRoute,
  usageRoute,
  settingsRoute.addChildren([keysRoute, ownKeysRoute, usersRoute, webhooksRoute, webhookRoute, channelsRoute, rulesRoute, budgetsRoute]),
]);

export const router = createRouter({ routeTree, basepath: '/console' });

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
