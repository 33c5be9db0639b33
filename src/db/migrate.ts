import type { Migration, MigrationResultSet } from 'kysely';
import { Migrator } from 'kysely';
import type { DatabaseHandle } from './database.js';
import { storageFault } from './faults.js';
import { migrations } from './migrations/index.js';

const MIGRATION_TABLE = 'switchboard_migrations';

/** False for a database Switchboard never migrated (a new, empty one). */
export async function hasMigrated(handle: DatabaseHandle): Promise<boolean> {
  const tables = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
  return tables.some((table) => table.name === MIGRATION_TABLE);
}

/**
 * Runs pending migrations. Kysely's migrator holds a lock while it works (an advisory lock
 * inside the migration transaction on PostgreSQL), so nodes starting together migrate once.
 */
export async function migrateToLatest(handle: DatabaseHandle): Promise<string[]> {
  const provided: Record<string, Migration> = {};
  for (const [name, migration] of Object.entries(migrations)) {
    provided[name] = { up: (db) => migration.up(db, handle.caps) };
  }
  const migrator = new Migrator({
    db: handle.db,
    provider: { getMigrations: async () => provided },
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: 'switchboard_migrations_lock',
    // Domains land migrations independently; one numbered below an applied one still runs.
    allowUnorderedMigrations: true,
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    const reason = result.error instanceof Error ? result.error.message : String(result.error);
    const what = failed ? `migration ${failed.migrationName}` : 'the migrations';
    // Unlike the start-up writes a full disk postpones, a schema change cannot wait: the code
    // would run against tables it does not know. The server does not start.
    if (storageFault(result.error) === 'full') {
      throw new Error(`${what} could not be applied: no storage space is left (${reason}). Free space and start again`, {
        cause: result.error,
      });
    }
    throw new Error(`${what} failed: ${reason}`, { cause: result.error });
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
