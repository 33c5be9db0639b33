/** Marks a list operation that pages with `limit`/`offset` and reports `meta.total`. */
export const PAGED = 'paged';
/** Marks an operation that takes no credentials (its path or query carries its own proof). */
export const PUBLIC = 'public';

/**
 * Every operation of the HTTP API, by domain, as `[method, path]` (plus PAGED for paginated
 * lists, which also get an `.all()` async iterator, or PUBLIC). A paginated list whose items sit
 * under a key of its data (`data.agents` of a lookup) names that key after PAGED.
 *
 * The API's contract as plain data, like the error codes of error-codes.ts: the server's OpenAPI
 * document takes its operation ids from it (http/openapi.ts) and the SDK builds its methods
 * from it (client.ts). It lives in the client package, which imports nothing of the server, and
 * the server reads it from here. test/client/openapi.test.ts compares it both ways with the served OpenAPI
 * document (operations, methods, paths, pagination, and the shapes in src/http/operation-schemas.ts), so
 * the SDK cannot drift from the server.
 */
export const OPERATIONS = {
  auth: {
    whoami: ['GET', '/api/v1/auth/whoami'],
    permissions: ['GET', '/api/v1/auth/permissions'],
    createKey: ['POST', '/api/v1/auth/keys'],
    listKeys: ['GET', '/api/v1/auth/keys', PAGED],
    revokeKey: ['DELETE', '/api/v1/auth/keys/{key_id}'],
    addPublicKey: ['POST', '/api/v1/auth/agents/{agent_id}/public-keys'],
    listPublicKeys: ['GET', '/api/v1/auth/agents/{agent_id}/public-keys'],
    removePublicKey: ['DELETE', '/api/v1/auth/agents/{agent_id}/public-keys/{key_id}'],
    grantGroupMember: ['PUT', '/api/v1/auth/groups/{group}/members/{agent_id}'],
    removeGroupMember: ['DELETE', '/api/v1/auth/groups/{group}/members/{agent_id}'],
    listGroups: ['GET', '/api/v1/auth/groups', PAGED],
    listGroupMembers: ['GET', '/api/v1/auth/groups/{group}/members', PAGED],
    createUser: ['POST', '/api/v1/auth/users'],
    listUsers: ['GET', '/api/v1/auth/users', PAGED],
    getUser: ['GET', '/api/v1/auth/users/{user_id}'],
    updateUser: ['PATCH', '/api/v1/auth/users/{user_id}'],
    deleteUser: ['DELETE', '/api/v1/auth/users/{user_id}'],
    signIn: ['POST', '/api/v1/auth/sessions', PUBLIC],
    currentSession: ['GET', '/api/v1/auth/sessions/current'],
    signOut: ['DELETE', '/api/v1/auth/sessions/current'],
    oidcProvider: ['GET', '/api/v1/auth/oidc', PUBLIC],
  },
  messaging: {
    send: ['POST', '/api/v1/messaging/send'],
    sendBatch: ['POST', '/api/v1/messaging/send-batch'],
    receive: ['GET', '/api/v1/messaging/receive'],
    acknowledge: ['POST', '/api/v1/messaging/acknowledge'],
    reject: ['POST', '/api/v1/messaging/reject'],
    extend: ['POST', '/api/v1/messaging/extend'],
    listDeadLetters: ['GET', '/api/v1/messaging/dead-letters', PAGED],
    redriveDeadLetter: ['POST', '/api/v1/messaging/dead-letters/{message_id}/redrive'],
    listInboxes: ['GET', '/api/v1/messaging/inboxes', PAGED],
    listInboxMessages: ['GET', '/api/v1/messaging/inboxes/{agent_id}/messages', PAGED],
    createSession: ['POST', '/api/v1/messaging/sessions'],
    listSessions: ['GET', '/api/v1/messaging/sessions', PAGED],
    getSession: ['GET', '/api/v1/messaging/sessions/{session_id}'],
    createThread: ['POST', '/api/v1/messaging/threads'],
    getThread: ['GET', '/api/v1/messaging/threads/{thread_id}'],
    listThreadMessages: ['GET', '/api/v1/messaging/threads/{thread_id}/messages', PAGED],
    publish: ['POST', '/api/v1/messaging/publish'],
    subscribe: ['POST', '/api/v1/messaging/subscribe'],
    listSubscriptions: ['GET', '/api/v1/messaging/subscriptions', PAGED],
    unsubscribe: ['DELETE', '/api/v1/messaging/subscriptions/{subscription_id}'],
    rateLimit: ['GET', '/api/v1/messaging/rate-limit'],
  },
  discovery: {
    registerCapability: ['POST', '/api/v1/discovery/capabilities'],
    listCapabilities: ['GET', '/api/v1/discovery/capabilities', PAGED],
    getCapability: ['GET', '/api/v1/discovery/capabilities/{capability_id}'],
    removeCapability: ['DELETE', '/api/v1/discovery/capabilities/{capability_id}'],
    deregisterAgent: ['DELETE', '/api/v1/discovery/agents/{agent_id}'],
    findAgents: ['GET', '/api/v1/discovery/agents', PAGED, 'agents'],
    heartbeat: ['POST', '/api/v1/discovery/heartbeat'],
    agentHealth: ['GET', '/api/v1/discovery/agents/{agent_id}/health'],
    listGroups: ['GET', '/api/v1/discovery/groups', PAGED],
    listGroupAgents: ['GET', '/api/v1/discovery/groups/{group_name}/agents', PAGED],
    search: ['POST', '/api/v1/discovery/search'],
  },
  routines: {
    list: ['GET', '/core/api/v1/routines', PAGED],
    create: ['POST', '/core/api/v1/routines'],
    get: ['GET', '/core/api/v1/routines/{id}'],
    update: ['PATCH', '/core/api/v1/routines/{id}'],
    delete: ['DELETE', '/core/api/v1/routines/{id}'],
    trigger: ['POST', '/core/api/v1/routines/{id}/trigger'],
    rotateToken: ['POST', '/core/api/v1/routines/{id}/rotate-token'],
    preview: ['GET', '/core/api/v1/routines/{id}/preview'],
    listFires: ['GET', '/core/api/v1/routines/{id}/fires', PAGED],
    webhook: ['POST', '/core/api/v1/routines/webhook/{token}', PUBLIC],
    listExecutions: ['GET', '/core/api/v1/routines/{id}/executions', PAGED],
    getExecution: ['GET', '/core/api/v1/routines/executions/{id}'],
    deleteExecution: ['DELETE', '/core/api/v1/routines/executions/{id}'],
  },
  projects: {
    list: ['GET', '/core/api/v1/projects', PAGED],
    create: ['POST', '/core/api/v1/projects'],
    get: ['GET', '/core/api/v1/projects/{id}'],
    update: ['PUT', '/core/api/v1/projects/{id}'],
    delete: ['DELETE', '/core/api/v1/projects/{id}'],
  },
  tasks: {
    list: ['GET', '/core/api/v1/tasks', PAGED],
    create: ['POST', '/core/api/v1/tasks'],
    get: ['GET', '/core/api/v1/tasks/{id}'],
    update: ['PATCH', '/core/api/v1/tasks/{id}'],
    delete: ['DELETE', '/core/api/v1/tasks/{id}'],
    claim: ['POST', '/core/api/v1/tasks/{id}/claim'],
    release: ['POST', '/core/api/v1/tasks/{id}/release'],
    listDependencies: ['GET', '/core/api/v1/tasks/{id}/dependencies'],
    addDependency: ['POST', '/core/api/v1/tasks/{id}/dependencies'],
    removeDependency: ['DELETE', '/core/api/v1/tasks/{id}/dependencies/{dep_id}'],
    listComments: ['GET', '/core/api/v1/tasks/{id}/comments', PAGED],
    addComment: ['POST', '/core/api/v1/tasks/{id}/comments'],
    listActivity: ['GET', '/core/api/v1/tasks/{id}/activity', PAGED],
  },
  coordination: {
    generatePlan: ['POST', '/api/v1/coordination/plans/generate'],
    createPlan: ['POST', '/api/v1/coordination/plans'],
    listPlans: ['GET', '/api/v1/coordination/plans', PAGED],
    getPlan: ['GET', '/api/v1/coordination/plans/{plan_id}'],
    updatePlan: ['PUT', '/api/v1/coordination/plans/{plan_id}'],
    deletePlan: ['DELETE', '/api/v1/coordination/plans/{plan_id}'],
    getPlanVersion: ['GET', '/api/v1/coordination/plans/{plan_id}/versions/{version}'],
    startRun: ['POST', '/api/v1/coordination/runs'],
    listRuns: ['GET', '/api/v1/coordination/runs', PAGED],
    getRun: ['GET', '/api/v1/coordination/runs/{run_id}'],
    listRunEvents: ['GET', '/api/v1/coordination/runs/{run_id}/events', PAGED],
    cancelRun: ['POST', '/api/v1/coordination/runs/{run_id}/cancel'],
    redriveRun: ['POST', '/api/v1/coordination/runs/{run_id}/redrive'],
    rerunRun: ['POST', '/api/v1/coordination/runs/{run_id}/rerun'],
    replayRuns: ['POST', '/api/v1/coordination/runs/replay'],
    approveStep: ['POST', '/api/v1/coordination/runs/{run_id}/steps/{step_id}/approve'],
    provideInput: ['POST', '/api/v1/coordination/runs/{run_id}/steps/{step_id}/input'],
    createApprovalLink: ['POST', '/api/v1/coordination/runs/{run_id}/steps/{step_id}/links'],
    saveCheckpoint: ['POST', '/api/v1/coordination/runs/{run_id}/steps/{step_id}/checkpoint'],
    appendStepLog: ['POST', '/api/v1/coordination/runs/{run_id}/steps/{step_id}/logs'],
    listRunLogs: ['GET', '/api/v1/coordination/runs/{run_id}/logs', PAGED],
    listPendingApprovals: ['GET', '/api/v1/coordination/approvals', PAGED],
    getApprovalLink: ['GET', '/api/v1/coordination/approvals/{token}', PUBLIC],
    decideByLink: ['POST', '/api/v1/coordination/approvals/{token}', PUBLIC],
    createTrigger: ['POST', '/api/v1/coordination/triggers'],
    listTriggers: ['GET', '/api/v1/coordination/triggers', PAGED],
    getTrigger: ['GET', '/api/v1/coordination/triggers/{trigger_id}'],
    updateTrigger: ['PATCH', '/api/v1/coordination/triggers/{trigger_id}'],
    deleteTrigger: ['DELETE', '/api/v1/coordination/triggers/{trigger_id}'],
    listTriggerFires: ['GET', '/api/v1/coordination/triggers/{trigger_id}/fires', PAGED],
    // Trigger hooks accept any method under their path (`path` is the rest of the URL, e.g. "github/push").
    hookGet: ['GET', '/api/v1/coordination/hooks/{path}'],
    hookPost: ['POST', '/api/v1/coordination/hooks/{path}'],
    hookPut: ['PUT', '/api/v1/coordination/hooks/{path}'],
    hookPatch: ['PATCH', '/api/v1/coordination/hooks/{path}'],
    hookDelete: ['DELETE', '/api/v1/coordination/hooks/{path}'],
  },
  artifacts: {
    upload: ['POST', '/api/v1/artifacts'],
    list: ['GET', '/api/v1/artifacts', PAGED],
    createSnippet: ['POST', '/api/v1/artifacts/snippets'],
    createUploadUrl: ['POST', '/api/v1/artifacts/upload-url'],
    putUpload: ['PUT', '/api/v1/artifacts/uploads/{upload_id}', PUBLIC],
    confirmUpload: ['POST', '/api/v1/artifacts/upload-url/{upload_id}/confirm'],
    listShared: ['GET', '/api/v1/artifacts/shared', PAGED],
    get: ['GET', '/api/v1/artifacts/{artifact_id}'],
    uploadVersion: ['PUT', '/api/v1/artifacts/{artifact_id}'],
    delete: ['DELETE', '/api/v1/artifacts/{artifact_id}'],
    download: ['GET', '/api/v1/artifacts/{artifact_id}/download'],
    downloadSigned: ['GET', '/api/v1/artifacts/signed/{artifact_id}/{version}', PUBLIC],
    createSignedUrl: ['POST', '/api/v1/artifacts/{artifact_id}/signed-url'],
    listVersions: ['GET', '/api/v1/artifacts/{artifact_id}/versions'],
    deleteVersion: ['DELETE', '/api/v1/artifacts/{artifact_id}/versions/{version}'],
    share: ['POST', '/api/v1/artifacts/{artifact_id}/share'],
    unshare: ['POST', '/api/v1/artifacts/{artifact_id}/unshare'],
    access: ['GET', '/api/v1/artifacts/{artifact_id}/access'],
  },
  events: {
    list: ['GET', '/api/v1/events', PAGED],
    // The raw Server-Sent Events response; `client.events.stream()` follows it and resumes.
    openStream: ['GET', '/api/v1/events/stream'],
  },
  webhooks: {
    create: ['POST', '/api/v1/webhooks'],
    list: ['GET', '/api/v1/webhooks', PAGED],
    get: ['GET', '/api/v1/webhooks/{id}'],
    update: ['PATCH', '/api/v1/webhooks/{id}'],
    delete: ['DELETE', '/api/v1/webhooks/{id}'],
    deliveries: ['GET', '/api/v1/webhooks/{id}/deliveries', PAGED],
    attempts: ['GET', '/api/v1/webhooks/{id}/deliveries/{delivery_id}/attempts', PAGED],
    test: ['POST', '/api/v1/webhooks/{id}/test'],
    retry: ['POST', '/api/v1/webhooks/{id}/deliveries/{delivery_id}/retry'],
  },
  notifications: {
    createChannel: ['POST', '/api/v1/notifications/channels'],
    listChannels: ['GET', '/api/v1/notifications/channels', PAGED],
    getChannel: ['GET', '/api/v1/notifications/channels/{id}'],
    updateChannel: ['PATCH', '/api/v1/notifications/channels/{id}'],
    deleteChannel: ['DELETE', '/api/v1/notifications/channels/{id}'],
    testChannel: ['POST', '/api/v1/notifications/channels/{id}/test'],
  },
  alerts: {
    createRule: ['POST', '/api/v1/alerts/rules'],
    listRules: ['GET', '/api/v1/alerts/rules', PAGED],
    getRule: ['GET', '/api/v1/alerts/rules/{id}'],
    updateRule: ['PATCH', '/api/v1/alerts/rules/{id}'],
    deleteRule: ['DELETE', '/api/v1/alerts/rules/{id}'],
    previewRule: ['POST', '/api/v1/alerts/rules/preview'],
    list: ['GET', '/api/v1/alerts', PAGED],
    get: ['GET', '/api/v1/alerts/{id}'],
    acknowledge: ['POST', '/api/v1/alerts/{id}/acknowledge'],
  },
  cluster: {
    listNodes: ['GET', '/api/v1/cluster/nodes', PAGED],
  },
  audit: {
    list: ['GET', '/api/v1/audit', PAGED],
    verify: ['GET', '/api/v1/audit/verify'],
  },
  usage: {
    record: ['POST', '/api/v1/usage'],
    totals: ['GET', '/api/v1/usage'],
  },
  budgets: {
    create: ['POST', '/api/v1/budgets'],
    list: ['GET', '/api/v1/budgets', PAGED],
    pauses: ['GET', '/api/v1/budgets/pauses'],
    get: ['GET', '/api/v1/budgets/{id}'],
    update: ['PATCH', '/api/v1/budgets/{id}'],
    delete: ['DELETE', '/api/v1/budgets/{id}'],
    resume: ['POST', '/api/v1/budgets/{id}/resume'],
  },
} as const satisfies Record<string, Record<string, OperationSpec>>;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type OperationSpec =
  | readonly [HttpMethod, string]
  | readonly [HttpMethod, string, typeof PAGED | typeof PUBLIC]
  | readonly [HttpMethod, string, typeof PAGED, itemsKey: string];
export type Domain = keyof typeof OPERATIONS;
/** `domain.name`, e.g. `messaging.send`. */
export type OperationKey = { [D in Domain]: `${D}.${keyof (typeof OPERATIONS)[D] & string}` }[Domain];

/**
 * The SDK's own note on the operation table (above): the operations that answer
 * with bytes, not an envelope. The client resolves them to their `Response` whatever its
 * Content-Type (the download of a JSON artifact is application/json too, and read as an
 * envelope it was `undefined`). They are the ones the shapes (shapes.ts) give no `data`;
 * test/client/openapi.test.ts checks that the two agree.
 */
export const BYTE_ANSWERS: ReadonlySet<string> = new Set(['artifacts.download', 'artifacts.downloadSigned', 'events.openStream']);
