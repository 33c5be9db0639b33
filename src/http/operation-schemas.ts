import { Type, type TSchema } from '@sinclair/typebox';
import * as Artifacts from '../artifacts/schemas.js';
import * as Audit from '../audit/schemas.js';
import * as Auth from '../auth/schemas.js';
import * as AccessGroups from '../auth/groups/schemas.js';
import * as Cluster from '../cluster/schemas.js';
import * as Coordination from '../coordination/schemas.js';
import * as Plans from '../coordination/plan-schemas.js';
import * as Triggers from '../coordination/trigger-schemas.js';
import * as Discovery from '../discovery/schemas.js';
import * as Events from '../events/schemas.js';
import { DeletedResource as Deleted, PageQuery, ReasonBody, withIntegerMaximum } from '../http/schemas.js';
import * as Messaging from '../messaging/schemas.js';
import * as Notifications from '../notifications/schemas.js';
import * as Alerts from '../alerts/schemas.js';
import * as Routines from '../routines/schemas.js';
import * as Tasks from '../tasks/schemas.js';
import * as Usage from '../usage/schemas.js';
import * as Webhooks from '../webhooks/schemas.js';
import type { OperationKey } from '#client/operations.js';

/**
 * The shapes of every operation, by the server's own TypeBox schemas: `body` (JSON request
 * body; `optionalBody` when it may be left out), `query`, and `data` (the envelope's data).
 * Operations without `data` answer with bytes (the client returns the `Response`); `upload`
 * takes a multipart form, `raw` takes bytes.
 *
 * The client package never imports it: scripts/generate-client-types.ts writes its types out
 * as plain TypeScript (clients/typescript/src/shapes.ts). test/client/openapi.test.ts compares each entry with the served OpenAPI
 * document, so a type here cannot disagree with what the server validates and answers.
 */
export interface OperationSchema {
  body?: TSchema;
  optionalBody?: true;
  query?: TSchema;
  data?: TSchema;
  /** The request body is a multipart form (`FormData`) or raw bytes, not JSON. */
  content?: 'multipart' | 'raw' | 'any';
}

const list = <T extends TSchema>(item: T) => Type.Array(item);

/** Request shapes as the server validates them: every integer bounded (withIntegerMaximum). */
function asValidated<T extends Record<string, OperationSchema>>(table: T): T {
  for (const operation of Object.values(table)) {
    if (operation.body) operation.body = withIntegerMaximum(operation.body);
    if (operation.query) operation.query = withIntegerMaximum(operation.query);
  }
  return table;
}

export const SCHEMAS = asValidated({
  'auth.whoami': { data: Auth.WhoAmI },
  'auth.permissions': { data: list(Auth.PermissionEntry) },
  'auth.createKey': { body: Auth.CreateKeyBody, data: Auth.CreatedKey },
  'auth.listKeys': { query: Auth.ListKeysQuery, data: list(Auth.ApiKey) },
  'auth.revokeKey': { query: Auth.RevokeKeyQuery, data: Auth.RevokedKey },
  'auth.addPublicKey': { body: Auth.AddPublicKeyBody, data: Auth.PublicKey },
  'auth.listPublicKeys': { data: list(Auth.PublicKey) },
  'auth.removePublicKey': { data: Deleted },
  'auth.grantGroupMember': { data: AccessGroups.Membership },
  'auth.removeGroupMember': { data: AccessGroups.MembershipRemoved },
  'auth.listGroups': { query: PageQuery, data: list(AccessGroups.AccessGroup) },
  'auth.listGroupMembers': { query: PageQuery, data: list(AccessGroups.Membership) },
  'auth.createUser': { body: Auth.CreateUserBody, data: Auth.User },
  'auth.listUsers': { query: PageQuery, data: list(Auth.User) },
  'auth.getUser': { data: Auth.User },
  'auth.updateUser': { body: Auth.UpdateUserBody, data: Auth.User },
  'auth.deleteUser': { data: Deleted },
  'auth.signIn': { body: Auth.SignInBody, data: Auth.Session },
  'auth.currentSession': { data: Auth.Session },
  'auth.signOut': { data: Deleted },
  'auth.oidcProvider': { data: Auth.OidcProvider },

  'messaging.send': { body: Messaging.SendBody, data: Messaging.Sent },
  'messaging.sendBatch': { body: Messaging.SendBatchBody, data: Messaging.SentBatch },
  'messaging.receive': { query: Messaging.ReceiveQuery, data: Messaging.Received },
  'messaging.acknowledge': { body: Messaging.AcknowledgeBody, data: Messaging.Acknowledged },
  'messaging.reject': { body: Messaging.RejectBody, data: Messaging.Rejected },
  'messaging.extend': { body: Messaging.ExtendBody, data: Messaging.LeaseExtended },
  'messaging.listDeadLetters': { query: Messaging.DeadLettersQuery, data: list(Messaging.DeadLetter) },
  'messaging.redriveDeadLetter': { body: ReasonBody, optionalBody: true, data: Messaging.Message },
  'messaging.listInboxes': { query: Messaging.AgentQuery, data: list(Messaging.Inbox) },
  'messaging.listInboxMessages': { query: Messaging.InboxMessagesQuery, data: list(Messaging.InboxMessage) },
  'messaging.createSession': { body: Messaging.SessionBody, data: Messaging.Session },
  'messaging.listSessions': { query: PageQuery, data: list(Messaging.Session) },
  'messaging.getSession': { data: Messaging.Session },
  'messaging.createThread': { body: Messaging.ThreadBody, data: Messaging.Thread },
  'messaging.getThread': { data: Messaging.Thread },
  'messaging.listThreadMessages': { query: PageQuery, data: list(Messaging.Message) },
  'messaging.publish': { body: Messaging.PublishBody, data: Messaging.Published },
  'messaging.subscribe': { body: Messaging.SubscribeBody, data: Messaging.Subscription },
  'messaging.listSubscriptions': { query: Messaging.AgentQuery, data: list(Messaging.Subscription) },
  'messaging.unsubscribe': { data: Deleted },
  'messaging.rateLimit': { query: Messaging.RateLimitQuery, data: Messaging.RateLimitStatus },

  'discovery.registerCapability': { body: Discovery.RegisterBody, data: Discovery.Capability },
  'discovery.listCapabilities': { query: Discovery.ListCapabilitiesQuery, data: list(Discovery.Capability) },
  'discovery.getCapability': { data: Discovery.Capability },
  'discovery.removeCapability': { data: Deleted },
  'discovery.deregisterAgent': { data: Discovery.AgentDeleted },
  'discovery.findAgents': { query: Discovery.LookupQuery, data: Discovery.LookupEnvelope.properties.data },
  'discovery.heartbeat': { body: Discovery.HeartbeatBody, data: Discovery.HealthRecord },
  'discovery.agentHealth': { data: Discovery.HealthRecord },
  'discovery.listGroups': { query: PageQuery, data: list(Discovery.Group) },
  'discovery.listGroupAgents': { query: PageQuery, data: list(Discovery.GroupMember) },
  'discovery.search': { body: Discovery.SearchBody, data: Discovery.SearchEnvelope.properties.data },

  'routines.list': { query: Routines.ListRoutinesQuery, data: list(Routines.Routine) },
  'routines.create': { body: Routines.CreateRoutineBody, data: Routines.Routine },
  'routines.get': { data: Routines.Routine },
  'routines.update': { body: Routines.UpdateRoutineBody, data: Routines.Routine },
  'routines.delete': { data: Deleted },
  'routines.trigger': { body: Routines.TriggerBody, optionalBody: true, data: Routines.Execution },
  'routines.rotateToken': { data: Routines.WebhookToken },
  'routines.preview': { query: Routines.PreviewQuery, data: Type.Array(Type.String({ format: 'date-time' })) },
  'routines.listFires': { query: PageQuery, data: list(Routines.Fire) },
  'routines.webhook': { content: 'any', data: Routines.WebhookFired },
  'routines.listExecutions': { query: Routines.ListExecutionsQuery, data: list(Routines.Execution) },
  'routines.getExecution': { data: Routines.Execution },
  'routines.deleteExecution': { data: Deleted },

  'projects.list': { query: Tasks.ListProjectsQuery, data: list(Tasks.Project) },
  'projects.create': { body: Tasks.ProjectBody, data: Tasks.Project },
  'projects.get': { data: Tasks.Project },
  'projects.update': { body: Tasks.ProjectBody, data: Tasks.Project },
  'projects.delete': { query: Tasks.DeleteProjectQuery, data: Deleted },

  'tasks.list': { query: Tasks.ListTasksQuery, data: list(Tasks.Task) },
  'tasks.create': { body: Tasks.CreateTaskBody, data: Tasks.Task },
  'tasks.get': { data: Tasks.Task },
  'tasks.update': { body: Tasks.UpdateTaskBody, data: Tasks.Task },
  'tasks.delete': { data: Deleted },
  'tasks.claim': { body: Tasks.ClaimBody, optionalBody: true, data: Tasks.Task },
  'tasks.release': { data: Tasks.Task },
  'tasks.listDependencies': { data: list(Tasks.Dependency) },
  'tasks.addDependency': { body: Tasks.AddDependencyBody, data: Tasks.Dependency },
  'tasks.removeDependency': { data: Deleted },
  'tasks.listComments': { query: PageQuery, data: list(Tasks.Comment) },
  'tasks.addComment': { body: Tasks.AddCommentBody, data: Tasks.Comment },
  'tasks.listActivity': { query: PageQuery, data: list(Tasks.Activity) },

  'coordination.generatePlan': { body: Plans.GenerateBody, data: Plans.GeneratedPlan },
  'coordination.createPlan': { body: Plans.PlanBody, data: Plans.Plan },
  'coordination.listPlans': { query: PageQuery, data: list(Plans.Plan) },
  'coordination.getPlan': { data: Plans.Plan },
  'coordination.updatePlan': { body: Plans.PlanBody, data: Plans.Plan },
  'coordination.deletePlan': { data: Deleted },
  'coordination.getPlanVersion': { data: Plans.Plan },
  'coordination.startRun': { body: Coordination.StartRunBody, data: Coordination.Run },
  'coordination.listRuns': { query: Coordination.ListRunsQuery, data: list(Coordination.Run) },
  'coordination.getRun': { data: Coordination.Run },
  'coordination.listRunEvents': { query: PageQuery, data: list(Coordination.RunEvent) },
  'coordination.cancelRun': { body: ReasonBody, optionalBody: true, data: Coordination.Run },
  'coordination.redriveRun': { body: ReasonBody, optionalBody: true, data: Coordination.Run },
  'coordination.rerunRun': { body: Coordination.RerunBody, data: Coordination.Run },
  'coordination.replayRuns': { body: Coordination.ReplayBody, data: Coordination.Replayed },
  'coordination.approveStep': { body: Coordination.ApproveBody, data: Coordination.Run },
  'coordination.provideInput': { body: Coordination.InputBody, data: Coordination.Run },
  'coordination.createApprovalLink': { body: Coordination.CreateLinkBody, data: Coordination.ApprovalLink },
  'coordination.saveCheckpoint': { body: Coordination.CheckpointBody, data: Coordination.Checkpoint },
  'coordination.appendStepLog': { body: Coordination.StepLogBody, data: Coordination.StepLogLine },
  'coordination.listRunLogs': { query: Coordination.RunLogsQuery, data: list(Coordination.StepLogLine) },
  'coordination.listPendingApprovals': { query: PageQuery, data: list(Coordination.PendingApproval) },
  'coordination.getApprovalLink': { data: Coordination.LinkedStep },
  'coordination.decideByLink': { body: Coordination.LinkDecisionBody, data: Coordination.LinkDecision },
  'coordination.createTrigger': { body: Triggers.CreateTriggerBody, data: Triggers.Trigger },
  'coordination.listTriggers': { query: Triggers.ListTriggersQuery, data: list(Triggers.Trigger) },
  'coordination.getTrigger': { data: Triggers.Trigger },
  'coordination.updateTrigger': { body: Triggers.UpdateTriggerBody, data: Triggers.Trigger },
  'coordination.deleteTrigger': { data: Deleted },
  'coordination.listTriggerFires': { query: PageQuery, data: list(Triggers.Fire) },
  'coordination.hookGet': { data: Triggers.HookStarted },
  'coordination.hookPost': { content: 'any', data: Triggers.HookStarted },
  'coordination.hookPut': { content: 'any', data: Triggers.HookStarted },
  'coordination.hookPatch': { content: 'any', data: Triggers.HookStarted },
  'coordination.hookDelete': { content: 'any', data: Triggers.HookStarted },

  'artifacts.upload': { content: 'multipart', data: Artifacts.Artifact },
  'artifacts.list': { query: Artifacts.ListQuery, data: list(Artifacts.Artifact) },
  'artifacts.createSnippet': { body: Artifacts.SnippetBody, data: Artifacts.Artifact },
  'artifacts.createUploadUrl': { body: Artifacts.UploadIntentBody, data: Artifacts.UploadIntent },
  'artifacts.putUpload': { content: 'raw', query: Artifacts.SignatureQuery, data: Artifacts.UploadReceived },
  'artifacts.confirmUpload': { data: Artifacts.Artifact },
  'artifacts.listShared': { query: Artifacts.SharedQuery, data: list(Artifacts.Artifact) },
  'artifacts.get': { data: Artifacts.Artifact },
  'artifacts.uploadVersion': { content: 'multipart', data: Artifacts.Artifact },
  'artifacts.delete': { data: Deleted },
  'artifacts.download': { query: Artifacts.DownloadQuery },
  'artifacts.downloadSigned': { query: Artifacts.SignatureQuery },
  'artifacts.createSignedUrl': { body: Artifacts.SignedUrlBody, data: Artifacts.SignedUrl },
  'artifacts.listVersions': { data: Artifacts.VersionList },
  'artifacts.deleteVersion': { data: Artifacts.VersionDeleted },
  'artifacts.share': { body: Artifacts.ShareBody, data: Artifacts.AccessList },
  'artifacts.unshare': { body: Artifacts.UnshareBody, data: Artifacts.AccessList },
  'artifacts.access': { data: Artifacts.AccessList },

  'events.list': { query: Events.ListEventsQuery, data: list(Events.Event) },
  'events.openStream': { query: Events.StreamEventsQuery },

  'webhooks.create': { body: Webhooks.CreateWebhookBody, data: Webhooks.CreatedWebhook },
  'webhooks.list': { query: Webhooks.ListWebhooksQuery, data: list(Webhooks.Webhook) },
  'webhooks.get': { data: Webhooks.Webhook },
  'webhooks.update': { body: Webhooks.UpdateWebhookBody, data: Webhooks.Webhook },
  'webhooks.delete': { data: Deleted },
  'webhooks.deliveries': { query: Webhooks.ListDeliveriesQuery, data: list(Webhooks.Delivery) },
  'webhooks.attempts': { query: Webhooks.ListAttemptsQuery, data: list(Webhooks.DeliveryAttempt) },
  'webhooks.test': { data: Webhooks.Delivery },
  'webhooks.retry': { data: Webhooks.Delivery },
  'notifications.createChannel': { body: Notifications.CreateChannelBody, data: Notifications.CreatedChannel },
  'notifications.listChannels': { query: Notifications.ListChannelsQuery, data: list(Notifications.Channel) },
  'notifications.getChannel': { data: Notifications.Channel },
  'notifications.updateChannel': { body: Notifications.UpdateChannelBody, data: Notifications.Channel },
  'notifications.deleteChannel': { data: Deleted },
  'notifications.testChannel': { data: Notifications.NotificationSent },
  'alerts.createRule': { body: Alerts.CreateRuleBody, data: Alerts.Rule },
  'alerts.listRules': { query: Alerts.ListRulesQuery, data: list(Alerts.Rule) },
  'alerts.getRule': { data: Alerts.Rule },
  'alerts.updateRule': { body: Alerts.UpdateRuleBody, data: Alerts.Rule },
  'alerts.deleteRule': { data: Deleted },
  'alerts.previewRule': { body: Alerts.PreviewBody, data: Alerts.Preview },
  'alerts.list': { query: Alerts.ListAlertsQuery, data: list(Alerts.Alert) },
  'alerts.get': { data: Alerts.Alert },
  'alerts.acknowledge': { data: Alerts.Alert },
  'usage.record': { body: Usage.RecordUsageBody, data: Usage.UsageRecord },
  'usage.totals': { query: Usage.UsageQuery, data: Usage.UsageTotals },
  'budgets.create': { body: Usage.CreateBudgetBody, data: Usage.Budget },
  'budgets.list': { query: Usage.BudgetListQuery, data: list(Usage.Budget) },
  'budgets.pauses': { data: Type.Array(Usage.ScopePause) },
  'budgets.get': { data: Usage.Budget },
  'budgets.update': { body: Usage.UpdateBudgetBody, data: Usage.Budget },
  'budgets.delete': { data: Deleted },
  'budgets.resume': { data: Usage.Budget },

  'cluster.listNodes': { query: Cluster.ListNodesQuery, data: list(Cluster.ClusterNode) },

  'audit.list': { query: Audit.ListAuditQuery, data: list(Audit.AuditEntry) },
  'audit.verify': { data: Audit.AuditVerification },
} satisfies Record<OperationKey, OperationSchema>);
