/**
 * pg-boss on PostgreSQL, in a fresh database, driven as in bench/baselines/pg-queues.ts: send
 * (or insert for a batch), consumers that fetch up to 100 jobs, complete them by id, and sleep
 * 5 ms when a fetch comes back empty (pg-boss does not long-poll).
 */
import PgBoss from 'pg-boss';
import { createTestDatabase, postgresTestUrl, type TestDatabase } from '../../test/helpers/database.js';
import { PG_BOSS_VERSION } from '../baselines/pg-queues.js';
import { databaseOf, postgresPids, postgresUnavailable, sentAtOf, type PeerSystem } from './system.js';

const EMPTY_SLEEP_MS = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function pgBoss(): PeerSystem {
  let database: TestDatabase | undefined;
  let boss: PgBoss | undefined;
  return {
    name: `pg-boss ${PG_BOSS_VERSION} on PostgreSQL`,
    async setup() {
      const reason = await postgresUnavailable();
      if (reason) return reason;
      database = await createTestDatabase('postgres');
      // No supervision or cron: maintenance would only add background load to the measured loop.
      boss = new PgBoss({ connectionString: database.databaseUrl!, max: 10, supervise: false, schedule: false });
      boss.on('error', (error) => console.warn(`pg-boss: ${String(error)}`));
      await boss.start();
      return undefined;
    },
    async queue(name) {
      const jobs = boss!;
      await jobs.createQueue(name);
      return {
        async send(payloads) {
          if (payloads.length === 1) await jobs.send(name, { p: payloads[0] });
          else await jobs.insert(payloads.map((p) => ({ name, data: { p } })));
        },
        async consume(onMessage) {
          let active = true;
          const loop = (async () => {
            while (active) {
              const fetched = await jobs.fetch<{ p: string }>(name, { batchSize: 100 });
              if (fetched.length === 0) {
                await sleep(EMPTY_SLEEP_MS);
                continue;
              }
              for (const job of fetched) onMessage(sentAtOf(job.data.p));
              await jobs.complete(
                name,
                fetched.map((job) => job.id),
              );
            }
          })();
          // A failure ends the loop and comes out of stop(), not as an unhandled rejection meanwhile.
          loop.catch(() => undefined);
          return async () => {
            active = false;
            await loop;
          };
        },
        // Its jobs go with the database at teardown (deleteQueue refuses a queue that still has jobs).
        close: async () => undefined,
      };
    },
    brokerProcesses: async () => [{ label: 'postgres', pids: await postgresPids(postgresTestUrl()!, databaseOf(database!.databaseUrl!)) }],
    async teardown() {
      await boss?.stop({ graceful: false, wait: true });
      await database?.drop();
      boss = undefined;
      database = undefined;
    },
  };
}
