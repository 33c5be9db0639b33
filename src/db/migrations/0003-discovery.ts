import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  // One row per agent + capability name; ids are time-sortable, so `ORDER BY id` is
  // registration order (re-registering keeps the id and therefore the place).
  await db.schema
    .createTable('discovery_capabilities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('capability', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('groups', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('discovery_capabilities_agent_capability', ['agent_id', 'capability'])
    .execute();
  // A lookup by name reads one index range in registration order.
  await db.schema.createIndex('discovery_capabilities_name').on('discovery_capabilities').columns(['capability', 'id']).execute();

  // The groups of each capability, one row each, for group filters, counts and membership.
  await db.schema
    .createTable('discovery_capability_groups')
    .addColumn('capability_id', 'text', (c) => c.notNull().references('discovery_capabilities.id').onDelete('cascade'))
    .addColumn('group_name', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('discovery_capability_groups_pk', ['capability_id', 'group_name'])
    .execute();
  await db.schema
    .createIndex('discovery_capability_groups_group')
    .on('discovery_capability_groups')
    .columns(['group_name', 'agent_id'])
    .execute();
  await db.schema
    .createIndex('discovery_capability_groups_agent')
    .on('discovery_capability_groups')
    .columns(['agent_id', 'group_name'])
    .execute();

  // The latest heartbeat of each agent; health is computed from it at read time.
  await db.schema
    .createTable('discovery_heartbeats')
    .addColumn('agent_id', 'text', (c) => c.primaryKey())
    .addColumn('load', 'double precision')
    .addColumn('metadata', 'text', (c) => c.notNull())
    // Start of the current run of heartbeats without a gap longer than the TTL (uptime).
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('last_heartbeat_at', 'bigint', (c) => c.notNull())
    .execute();

  // Named counters advanced atomically: round-robin cursors and the change sequence.
  await db.schema
    .createTable('discovery_counters')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'bigint', (c) => c.notNull())
    .execute();

  // The latest change of each capability (seq from the `changes` counter), so every node
  // brings its in-memory search index up to date by reading what changed since it last looked.
  await db.schema
    .createTable('discovery_changes')
    .addColumn('capability_id', 'text', (c) => c.primaryKey())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('changed_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('discovery_changes_seq').on('discovery_changes').column('seq').execute();
}
