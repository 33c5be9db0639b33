/*
 * Every TanStack Query key of the console: one factory per resource, in one vocabulary.
 *
 *   all            the resource's root: what its live refresh and its changes invalidate
 *   list(params)   a page of its list, keyed by everything that makes the page (filters, offset)
 *   detail(id)     one of it; what belongs to that one (a run's events, a task's comments, an
 *                  agent's inbox) nests below it, so invalidating the detail refreshes those too
 *   other names    other reads of the resource, named after what they serve (`lookup`: one large
 *                  page to resolve names; `overview`: the overview's panel)
 *
 * A key is a prefix of the keys below it: `invalidateQueries({ queryKey: queryKeys.runs.all })`
 * reaches every runs query, `queryKeys.tasks.detail(id)` the task and its comments, activity and
 * dependencies.
 */

/** A resource's root, pages of its list and one of it: the vocabulary every factory below starts from. */
function resource<R extends string>(root: R) {
  return {
    all: [root] as const,
    list: (params: object) => [root, 'list', params] as const,
    detail: (id: string) => [root, 'detail', id] as const,
  };
}

const runs = resource('runs');
const plans = resource('plans');
const agents = resource('agents');
const routines = resource('routines');
const triggers = resource('triggers');
const tasks = resource('tasks');
// Projects live under the tasks' root: task events refresh the boards and project lists too.
const projects = {
  list: (params: object) => ['tasks', 'projects', 'list', params] as const,
  detail: (projectId: string) => ['tasks', 'projects', 'detail', projectId] as const,
};
const artifacts = resource('artifacts');
const webhooks = resource('webhooks');
const agentInbox = (agentId: string) => [...agents.detail(agentId), 'inbox'] as const;
const webhookDeliveries = (webhookId: string) => [...webhooks.detail(webhookId), 'deliveries'] as const;

export const queryKeys = {
  /** The browser's session (null when signed out), which hands out the CSRF token. */
  session: ['session'] as const,
  whoami: {
    all: ['whoami'] as const,
    /** Per session: a new sign-in asks again. */
    ofSession: (sessionId: string | undefined) => ['whoami', sessionId] as const,
  },
  oidcProvider: ['oidc-provider'] as const,
  /** A public approval link's step (no session). */
  approvalLink: (token: string) => ['approval-link', token] as const,
  /** Who the browser is signed in as, seen from a public approval link's page (null: no one). */
  approvalLinkViewer: ['approval-link-viewer'] as const,

  approvals: {
    all: ['approvals'] as const,
    pending: () => ['approvals', 'pending'] as const,
    /** A waiting step's run, for its input and earlier outputs (refreshed with the approvals). */
    run: (runId: string) => ['approvals', 'run', runId] as const,
  },
  runs: {
    ...runs,
    /** How many runs of the last 24 h have this status (the overview's counts). */
    lastDay: (status: string) => ['runs', 'last-24h', status] as const,
    events: (runId: string, offset: number) => [...runs.detail(runId), 'events', offset] as const,
    /** The log lines of a run's step. */
    stepLogs: (runId: string, stepId: string) => [...runs.detail(runId), 'logs', stepId] as const,
  },
  /** No event says a plan changed: only budget events (a plan's `paused`) invalidate the plans. */
  plans: {
    /** `detail`: by id or alias, as the URL names it. */
    ...plans,
    /** One large page of plans, for their aliases and the plan filter's suggestions. */
    lookup: () => ['plans', 'lookup'] as const,
    /** A version never changes once saved. */
    version: (planId: string | undefined, version: number | undefined) => ['plans', 'detail', planId, 'version', version] as const,
  },
  agents: {
    ...agents,
    /** Every agent's health (the overview's panel). */
    overview: () => ['agents', 'overview'] as const,
    /** The capabilities of an agent's row in the list. */
    rowCapabilities: (agentId: string) => ['agents', 'capabilities', agentId] as const,
    capabilities: (agentId: string) => [...agents.detail(agentId), 'capabilities'] as const,
    health: (agentId: string) => [...agents.detail(agentId), 'health'] as const,
    inbox: agentInbox,
    inboxSummary: (agentId: string) => [...agentInbox(agentId), 'summary'] as const,
    /** A page of the pending, leased or dead messages. */
    inboxMessages: (agentId: string, state: 'pending' | 'leased' | 'dead', offset: number) =>
      [...agentInbox(agentId), state, offset] as const,
  },
  inboxes: {
    all: ['inboxes'] as const,
    overview: () => ['inboxes', 'overview'] as const,
  },
  deadLetters: resource('dead-letters'),
  routines: {
    ...routines,
    /** The routines whose last execution failed (the overview's panel). */
    failing: () => ['routines', 'failing'] as const,
    executions: (routineId: string, offset: number) => [...routines.detail(routineId), 'executions', offset] as const,
  },
  triggers: {
    ...triggers,
    fires: (triggerId: string) => [...triggers.detail(triggerId), 'fires'] as const,
  },
  tasks: {
    ...tasks,
    projects: projects.list,
    project: projects.detail,
    /** A board's column. */
    board: (projectId: string, status: string) => [...projects.detail(projectId), 'board', status] as const,
    dependencies: (taskId: string) => [...tasks.detail(taskId), 'dependencies'] as const,
    comments: (taskId: string, offset: number) => [...tasks.detail(taskId), 'comments', offset] as const,
    activity: (taskId: string, offset: number) => [...tasks.detail(taskId), 'activity', offset] as const,
  },
  artifacts: {
    ...artifacts,
    versions: (artifactId: string) => [...artifacts.detail(artifactId), 'versions'] as const,
  },
  /**
   * A version's bytes for its preview, by content hash: outside the artifacts' root, so that
   * their live refreshes do not download contents again (a hash's content never changes).
   */
  artifactContent: (artifactId: string, version: number, sha256: string) => ['artifact-content', artifactId, version, sha256] as const,
  users: resource('users'),
  keys: resource('keys'),
  webhooks: {
    ...webhooks,
    deliveries: webhookDeliveries,
    deliveriesPage: (webhookId: string, params: object) => [...webhookDeliveries(webhookId), params] as const,
    /** A delivery's attempts, by how many there are (a new attempt is a new key); not refreshed with the deliveries. */
    attempts: (deliveryId: string, count: number) => ['webhooks', 'attempts', deliveryId, count] as const,
  },
  audit: resource('audit'),
  notificationChannels: resource('notification-channels'),
  alertRules: resource('alert-rules'),
  /** Usage totals, by what they are grouped by and filtered on. */
  usage: {
    all: ['usage'] as const,
    totals: (params: object) => ['usage', 'totals', params] as const,
  },
  /** `paused`: the budgets pausing their scope now (their names and Resume, budgets:admin). */
  budgets: {
    ...resource('budgets'),
    paused: () => ['budgets', 'paused'] as const,
    /** What budgets pause now (every reader's, without the budgets). */
    pauses: () => ['budgets', 'pauses'] as const,
  },
  alerts: {
    ...resource('alerts'),
    /** The firing alerts (the overview's panel). */
    firing: () => ['alerts', 'firing'] as const,
  },
};
