import type { ArtifactsTables } from '../artifacts/store.js';
import type { AuthTables } from '../auth/store.js';
import type { CoordinationTables } from '../coordination/store.js';
import type { DiscoveryTables } from '../discovery/store.js';
import type { MessagingTables } from '../messaging/store.js';
import type { RoutinesTables } from '../routines/store.js';
import type { TasksTables } from '../tasks/store.js';

/**
 * The database seen by Kysely: the union of every domain's tables. Each domain declares its
 * own tables next to its store; this file only joins them.
 */
export interface Database extends ArtifactsTables, AuthTables, CoordinationTables, DiscoveryTables, MessagingTables, RoutinesTables, TasksTables {}
