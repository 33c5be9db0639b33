import type { Logger } from 'pino';
import { InProcessNotifier, type Notifier } from '../kernel/notifier.js';
import type { DatabaseHandle } from './database.js';
import { PollingNotifier } from './polling-notifier.js';
import { PostgresNotifier } from './postgres-notifier.js';

/**
 * The notifier a database calls for: in-process on SQLite (one server per file), LISTEN/NOTIFY
 * on PostgreSQL, or notices polled every 250 ms from a table when `listen` is false
 * (SWITCHBOARD_PG_LISTEN=off, for PgBouncer in transaction mode).
 */
export function openNotifier(database: DatabaseHandle, options: { listen: boolean }, logger: Logger): Notifier {
  if (!database.pool || !database.url) return new InProcessNotifier();
  if (!options.listen) return new PollingNotifier(database.db, logger);
  return new PostgresNotifier(database.url, database.pool, logger);
}
