import type { A2aTables } from '../a2a/tables.js';
import type { AlertsTables } from '../alerts/tables.js';
import type { ArtifactsTables } from '../artifacts/tables.js';
import type { AuditTables } from '../audit/tables.js';
import type { AuthTables } from '../auth/tables.js';
import type { AccessGroupsTables } from '../auth/groups/tables.js';
import type { ClusterTables } from '../cluster/tables.js';
import type { CoordinationTables } from '../coordination/tables.js';
import type { DebounceTables } from '../debounce/tables.js';
import type { DiscoveryTables } from '../discovery/tables.js';
import type { EventsTables } from '../events/tables.js';
import type { MessagingTables } from '../messaging/tables.js';
import type { NotificationsTables } from '../notifications/tables.js';
import type { RoutinesTables } from '../routines/tables.js';
import type { TasksTables } from '../tasks/tables.js';
import type { UsageTables } from '../usage/tables.js';
import type { WebhooksTables } from '../webhooks/tables.js';

/**
 * The database seen by Kysely: the union of every domain's tables. Each domain declares its
 * own tables in its tables.ts (which imports nothing); this file only joins them.
 */
export interface Database
  extends
    A2aTables,
    AlertsTables,
    AccessGroupsTables,
    ArtifactsTables,
    AuditTables,
    AuthTables,
    ClusterTables,
    CoordinationTables,
    DebounceTables,
    DiscoveryTables,
    EventsTables,
    MessagingTables,
    NotificationsTables,
    RoutinesTables,
    TasksTables,
    UsageTables,
    WebhooksTables {}
