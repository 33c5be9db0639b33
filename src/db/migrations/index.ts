import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';
import * as foundation from './0001-foundation.js';
import * as messaging from './0002-messaging.js';
import * as discovery from './0003-discovery.js';
import * as tasks from './0004-tasks.js';
import * as artifacts from './0005-artifacts.js';
import * as routines from './0006-routines.js';
import * as coordination from './0007-coordination.js';
import * as coordinationTriggers from './0008-coordination-triggers.js';
import * as artifactsInline from './0009-artifacts-inline.js';
import * as routinesBurst from './0010-routines-burst.js';
import * as discoverySpeed from './0011-discovery-speed.js';
import * as events from './0012-events.js';
import * as discoveryHealth from './0013-discovery-health.js';
import * as webhooks from './0014-webhooks.js';
import * as eventsAppendLock from './0015-events-append-lock.js';
import * as cluster from './0016-cluster.js';
import * as blobChunks from './0017-blob-chunks.js';
import * as clusterNotices from './0018-cluster-notices.js';
import * as rateLimits from './0019-rate-limits.js';
import * as traces from './0020-traces.js';
import * as a2a from './0021-a2a.js';
import * as authPublicKeyRegistrars from './0022-auth-public-key-registrars.js';
import * as keyScopes from './0023-key-scopes.js';
import * as accessGroups from './0024-access-groups.js';
import * as ownership from './0025-ownership.js';
import * as usersSessions from './0026-users-sessions.js';
import * as auditLog from './0027-audit-log.js';
import * as blobStagingNodes from './0028-blob-staging-nodes.js';
import * as userOidcIdentity from './0031-user-oidc-identity.js';
import * as webhookDeliveryAttempts from './0032-webhook-delivery-attempts.js';
import * as runTags from './0033-run-tags.js';
import * as notificationChannels from './0034-notification-channels.js';
import * as runMetadata from './0035-run-metadata.js';
import * as alerts from './0036-alerts.js';
import * as retention from './0038-retention.js';
import * as messageFlow from './0039-message-flow.js';
import * as routineOutputJson from './0040-routine-output-json.js';
import * as flowLimits from './0041-flow-limits.js';
import * as triggerDebounce from './0042-trigger-debounce.js';
import * as autovacuum from './0043-autovacuum.js';
import * as inboxCounters from './0044-inbox-counters.js';
import * as approvalTimers from './0045-approval-timers.js';
import * as usage from './0046-usage.js';
import * as budgets from './0047-budgets.js';
import * as stepCheckpoints from './0048-step-checkpoints.js';
import * as runReruns from './0049-run-reruns.js';
import * as routineDebounce from './0052-routine-debounce.js';
import * as debounces from './0053-debounces.js';
import * as dropWorkerLeases from './0056-drop-worker-leases.js';
import * as usageRollupGrain from './0057-usage-rollup-grain.js';
import * as usageRollupTrigger from './0058-usage-rollup-trigger.js';
import * as listFilterIndexes from './0059-list-filter-indexes.js';
import * as messagesInboxTime from './0060-messages-inbox-time.js';
import * as claimChecks from './0061-claim-checks.js';
import * as stepPayloadRefs from './0062-step-payload-refs.js';
import * as deliveryCapability from './0065-delivery-capability.js';
import * as artifactOffloads from './0066-artifact-offloads.js';
import * as runOutputRef from './0067-run-output-ref.js';
import * as usagePlanCovering from './0068-usage-plan-covering.js';
import * as usagePartialIndexes from './0070-usage-partial-indexes.js';
import * as orderingPending from './0071-ordering-pending.js';

export interface SwitchboardMigration {
  up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void>;
}

/**
 * Every migration, by name; names sort in the order they run. Each domain adds its own file
 * (numbered by the domain that introduced it) and one line here.
 */
export const migrations: Record<string, SwitchboardMigration> = {
  '0001-foundation': foundation,
  '0002-messaging': messaging,
  '0003-discovery': discovery,
  '0004-tasks': tasks,
  '0005-artifacts': artifacts,
  '0006-routines': routines,
  '0007-coordination': coordination,
  '0008-coordination-triggers': coordinationTriggers,
  '0009-artifacts-inline': artifactsInline,
  '0010-routines-burst': routinesBurst,
  '0011-discovery-speed': discoverySpeed,
  '0012-events': events,
  '0013-discovery-health': discoveryHealth,
  '0014-webhooks': webhooks,
  '0015-events-append-lock': eventsAppendLock,
  '0016-cluster': cluster,
  '0017-blob-chunks': blobChunks,
  '0018-cluster-notices': clusterNotices,
  '0019-rate-limits': rateLimits,
  '0020-traces': traces,
  '0021-a2a': a2a,
  '0022-auth-public-key-registrars': authPublicKeyRegistrars,
  '0023-key-scopes': keyScopes,
  '0024-access-groups': accessGroups,
  '0025-ownership': ownership,
  '0026-users-sessions': usersSessions,
  '0027-audit-log': auditLog,
  '0028-blob-staging-nodes': blobStagingNodes,
  '0031-user-oidc-identity': userOidcIdentity,
  '0032-webhook-delivery-attempts': webhookDeliveryAttempts,
  '0033-run-tags': runTags,
  '0034-notification-channels': notificationChannels,
  '0035-run-metadata': runMetadata,
  '0036-alerts': alerts,
  '0038-retention': retention,
  '0039-message-flow': messageFlow,
  '0040-routine-output-json': routineOutputJson,
  '0041-flow-limits': flowLimits,
  '0042-trigger-debounce': triggerDebounce,
  '0043-autovacuum': autovacuum,
  '0044-inbox-counters': inboxCounters,
  '0045-approval-timers': approvalTimers,
  '0046-usage': usage,
  '0047-budgets': budgets,
  '0048-step-checkpoints': stepCheckpoints,
  '0049-run-reruns': runReruns,
  '0052-routine-debounce': routineDebounce,
  '0053-debounces': debounces,
  '0056-drop-worker-leases': dropWorkerLeases,
  '0057-usage-rollup-grain': usageRollupGrain,
  '0058-usage-rollup-trigger': usageRollupTrigger,
  '0059-list-filter-indexes': listFilterIndexes,
  '0060-messages-inbox-time': messagesInboxTime,
  '0061-claim-checks': claimChecks,
  '0062-step-payload-refs': stepPayloadRefs,
  '0065-delivery-capability': deliveryCapability,
  '0066-artifact-offloads': artifactOffloads,
  '0067-run-output-ref': runOutputRef,
  '0068-usage-plan-covering': usagePlanCovering,
  '0070-usage-partial-indexes': usagePartialIndexes,
  '0071-ordering-pending': orderingPending,
};
