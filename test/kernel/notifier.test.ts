import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresNotifier } from '../../src/db/postgres-notifier.js';
import { InProcessNotifier, type Notifier } from '../../src/kernel/notifier.js';
import { createTestDatabase, postgresTestUrl, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { waitFor } from '../helpers/wait.js';

const logger = pino({ level: 'silent' });

function nextMessage(notifier: Notifier, channel: string): Promise<{ payload: string; at: number }> {
  return new Promise((resolve) => {
    const stop = notifier.listen(channel, (payload) => {
      stop();
      resolve({ payload, at: performance.now() });
    });
  });
}

describeEachDialect('notifier', (dialect) => {
  let database: TestDatabase;
  const pools: pg.Pool[] = [];
  const notifiers: Notifier[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    for (const n of notifiers) await n.close();
    for (const pool of pools) await pool.end();
    await database.drop();
  });

  async function node(): Promise<Notifier> {
    if (dialect === 'sqlite') {
      const n = new InProcessNotifier();
      notifiers.push(n);
      return n;
    }
    // A pool of its own: the notifier only borrows the one it is given.
    const pool = new pg.Pool({ connectionString: database.databaseUrl!, max: 2 });
    // Dropping the database at the end ends its connections; an idle one's error is expected then.
    pool.on('error', () => undefined);
    pools.push(pool);
    const n = new PostgresNotifier(database.databaseUrl!, pool, logger);
    notifiers.push(n);
    await n.whenReady();
    return n;
  }

  it('wakes a listener on another connection within 100 ms', async () => {
    const publisher = await node();
    // On SQLite there is one process, so the same emitter is the whole transport.
    const listener = dialect === 'sqlite' ? publisher : await node();
    for (let i = 0; i < 5; i++) {
      const received = nextMessage(listener, 'inbox:agent-1');
      const sentAt = performance.now();
      await publisher.notify('inbox:agent-1', `hello ${i}`);
      const { payload, at } = await received;
      expect(payload).toBe(`hello ${i}`);
      expect(at - sentAt).toBeLessThan(100);
    }
  });

  it('delivers only to listeners of the channel, and stops after unlisten', async () => {
    const n = await node();
    const seen: string[] = [];
    const stopA = n.listen('a', (p) => seen.push(`a:${p}`));
    n.listen('b', (p) => seen.push(`b:${p}`));
    const firstA = nextMessage(n, 'a');
    await n.notify('a', '1');
    await firstA;
    stopA();
    const done = nextMessage(n, 'b');
    await n.notify('a', '2');
    await n.notify('b', '3');
    await done;
    expect(seen).toEqual(['a:1', 'b:3']);
  });
});

describe.runIf(postgresTestUrl())('PostgreSQL notifier alone on its database', () => {
  let database: TestDatabase;
  const opened: Array<{ notifier: PostgresNotifier; pool: pg.Pool }> = [];
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
  });
  afterAll(async () => {
    for (const { notifier, pool } of opened) {
      await notifier.close();
      await pool.end();
    }
    await database?.drop();
  });

  /** A notifier saying hello every 100 ms: alone after 200 ms of listening with nobody else. */
  async function open(): Promise<PostgresNotifier> {
    const pool = new pg.Pool({ connectionString: database.databaseUrl!, max: 2 });
    pool.on('error', () => undefined);
    const notifier = new PostgresNotifier(database.databaseUrl!, pool, logger, 100);
    opened.push({ notifier, pool });
    await notifier.whenReady();
    return notifier;
  }

  it('hands notices to its own listeners without a NOTIFY, and NOTIFYs again once another node listens', async () => {
    // A plain LISTEN connection hears what goes through PostgreSQL.
    const spy = new pg.Client({ connectionString: database.databaseUrl! });
    await spy.connect();
    const overPostgres: string[] = [];
    spy.on('notification', (msg) => {
      if (!msg.payload?.includes('notifier:hello')) overPostgres.push(msg.payload ?? '');
    });
    await spy.query('LISTEN switchboard');
    try {
      const first = await open();
      expect(first.alone).toBe(false);
      await waitFor(() => first.alone, 5_000, 10);
      const local = nextMessage(first, 'news');
      await first.notify('news', 'alone');
      expect((await local).payload).toBe('alone');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(overPostgres).toEqual([]);

      // A second node says hello as it starts listening: the first hears it and is no longer alone.
      const second = await open();
      await waitFor(() => !first.alone, 2_000, 5);
      const remote = nextMessage(second, 'news');
      await first.notify('news', 'together');
      expect((await remote).payload).toBe('together');
      // The spy's connection hears it on its own time.
      await waitFor(() => overPostgres.length === 1, 2_000, 5);
      // The second learns of the first by its answer, at once, not a hello period later.
      expect(second.alone).toBe(false);
      await second.close();
      // Three periods without a hello from the other: alone again.
      await waitFor(() => first.alone, 5_000, 10);
    } finally {
      await spy.end();
    }
  });
});
