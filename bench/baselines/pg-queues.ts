// The PostgreSQL job queues the messaging bench (issue 3 (e)) compares Switchboard with, driven
// in the bench process through the same QueueClient interface as Switchboard's HTTP API:
// pg-boss (send/insert + fetch + complete) and a raw `FOR UPDATE SKIP LOCKED` claim/ack loop,
// the floor any PostgreSQL queue pays. Each works in the database it is given (the bench makes
// a fresh one and drops it afterwards).
import { createRequire } from 'node:module';
import PgBoss from 'pg-boss';
import pg from 'pg';

export const PG_BOSS_VERSION = (createRequire(import.meta.url)('pg-boss/package.json') as { version: string }).version;

/** What the end-to-end driver needs from a queue: send, claim up to `max`, ack claimed ids. */
export interface QueueClient {
  readonly name: string;
  /** Prepares a destination (queue) before it is used. */
  prepare(destination: string): Promise<void>;
  /** Sends `count` messages to `destination`: one call per message when count is 1, else one batch. */
  send(destination: string, count: number): Promise<void>;
  /** Claims up to `max` messages; waits (long-poll or a short sleep) when none is there. */
  receive(destination: string, max: number): Promise<string[]>;
  ack(destination: string, ids: string[]): Promise<void>;
  close(): Promise<void>;
}

/** A job queue's consumers poll: when the queue is empty they sleep this long before fetching again. */
const EMPTY_SLEEP_MS = 5;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function pgBossQueue(databaseUrl: string): Promise<QueueClient> {
  // No supervision or cron: maintenance would only add background load to the measured loop.
  const boss = new PgBoss({ connectionString: databaseUrl, max: 10, supervise: false, schedule: false });
  boss.on('error', () => undefined);
  await boss.start();
  return {
    name: 'pg-boss',
    prepare: (destination) => boss.createQueue(destination),
    async send(destination, count) {
      if (count === 1) await boss.send(destination, { x: 1 });
      else await boss.insert(Array.from({ length: count }, () => ({ name: destination, data: { x: 1 } })));
    },
    async receive(destination, max) {
      const jobs = await boss.fetch<{ x: number }>(destination, { batchSize: max });
      if (jobs.length === 0) await sleep(EMPTY_SLEEP_MS);
      return jobs.map((job) => job.id);
    },
    async ack(destination, ids) {
      await boss.complete(destination, ids);
    },
    close: () => boss.stop({ graceful: false, wait: true }),
  };
}

export async function skipLockedQueue(databaseUrl: string): Promise<QueueClient> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await pool.query(`CREATE TABLE IF NOT EXISTS raw_jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue text NOT NULL,
    payload text NOT NULL,
    state text NOT NULL DEFAULT 'pending',
    locked_at bigint,
    created_at bigint NOT NULL)`);
  await pool.query('CREATE INDEX IF NOT EXISTS raw_jobs_dequeue ON raw_jobs (queue, state, id)');
  const payload = JSON.stringify({ x: 1 });
  return {
    name: 'raw SKIP LOCKED',
    prepare: async () => undefined,
    async send(destination, count) {
      await pool.query({
        name: 'raw-send',
        text: 'INSERT INTO raw_jobs (queue, payload, created_at) SELECT $1, $2, $3 FROM generate_series(1, $4)',
        values: [destination, payload, Date.now(), count],
      });
    },
    async receive(destination, max) {
      const { rows } = await pool.query<{ id: string }>({
        name: 'raw-claim',
        text: `UPDATE raw_jobs SET state = 'active', locked_at = $3
               WHERE id IN (SELECT id FROM raw_jobs WHERE queue = $1 AND state = 'pending' ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
               RETURNING id, payload`,
        values: [destination, max, Date.now()],
      });
      if (rows.length === 0) await sleep(EMPTY_SLEEP_MS);
      return rows.map((row) => String(row.id));
    },
    async ack(_destination, ids) {
      await pool.query({ name: 'raw-ack', text: `UPDATE raw_jobs SET state = 'done' WHERE id = ANY($1::bigint[])`, values: [ids] });
    },
    close: () => pool.end(),
  };
}
