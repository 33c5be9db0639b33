import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * What agents keep of their work on a step: the latest checkpoint of each step (a redelivered or
 * retried step message carries it), and the log lines they append, in order.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('run_step_checkpoints')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('saved_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('run_step_checkpoints_pk', ['run_id', 'step_id'])
    .execute();
  await caps
    .serialPrimaryKey(db.schema.createTable('run_step_logs'), 'seq')
    .addColumn('run_id', 'text', (c) => c.notNull())
    .addColumn('step_id', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('line', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('run_step_logs_step').on('run_step_logs').columns(['run_id', 'step_id', 'seq']).execute();
}
