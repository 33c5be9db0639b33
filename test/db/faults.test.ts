import net from 'node:net';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { storageFault } from '../../src/db/faults.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { migrations } from '../../src/db/migrations/index.js';
import { newId } from '../../src/kernel/ids.js';
import { createTestDatabase, postgresTestUrl, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const SEND = '/api/v1/messaging/send';

describe('storage faults: classification', () => {
  it.each([
    [{ code: 'ECONNREFUSED' }, 'unavailable'],
    [{ code: 'ECONNRESET' }, 'unavailable'],
    [{ code: '57P01', message: 'terminating connection due to administrator command' }, 'unavailable'],
    [{ code: '57P03' }, 'unavailable'],
    [{ code: '08006' }, 'unavailable'],
    [{ code: '53300' }, 'unavailable'],
    [new Error('Connection terminated unexpectedly'), 'unavailable'],
    [new Error('timeout exceeded when trying to connect'), 'unavailable'],
    [new AggregateError([Object.assign(new Error('a'), { code: 'ECONNREFUSED' })]), 'unavailable'],
    [{ code: 'SQLITE_BUSY' }, 'unavailable'],
    [{ code: 'SQLITE_IOERR_WRITE' }, 'unavailable'],
    [{ code: 'SQLITE_FULL' }, 'full'],
    [{ code: 'ENOSPC' }, 'full'],
    [{ code: '53100' }, 'full'],
    [{ code: '23505' }, null],
    [{ code: 'SQLITE_CONSTRAINT_UNIQUE' }, null],
    [new Error('boom'), null],
    ['ECONNREFUSED', null],
  ])('%j is %s', (err, fault) => {
    expect(storageFault(err)).toBe(fault);
  });
});

/** A TCP proxy to PostgreSQL that the test cuts (refusing and dropping connections) and restores. */
class CuttableProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async open(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.once('close', () => this.sockets.delete(socket));
        socket.once('error', () => (client.destroy(), upstream.destroy()));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server!;
    this.server = null;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

// Issue 20 item 10: with the database out of reach a request was a 500; now a 503
// service_unavailable with Retry-After, and the server recovers by itself once it is back.
describeEachDialect('storage faults: the database out of reach', (dialect) => {
  let database: TestDatabase;
  let server: TestServer;
  let proxy: CuttableProxy | null = null;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    const env: Record<string, string> = {};
    if (dialect === 'postgres') {
      const target = new URL(postgresTestUrl()!);
      proxy = new CuttableProxy(target.hostname, Number(target.port || 5432));
      await proxy.open();
      const proxied = new URL(database.databaseUrl!);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      env.DATABASE_URL = proxied.toString();
    }
    server = await startServer(dialect, { database, env });
  });
  afterAll(async () => {
    await server?.close();
    await proxy?.cut().catch(() => undefined);
    await database?.drop();
  });

  /** PostgreSQL: the proxy cut. SQLite: another connection holding the write lock past the server's 5 s wait. */
  async function outOfReach(): Promise<() => Promise<void>> {
    if (proxy) {
      await proxy.cut();
      return () => proxy!.open();
    }
    // The server runs in this process: a BEGIN that waited inside SQLite would stop the event
    // loop the server's open write group needs to commit, so the lock is retried on a timer.
    const other = new BetterSqlite3(path.join(database.dataDir, 'switchboard.db'), { timeout: 0 });
    await waitFor(
      () => {
        try {
          other.exec('BEGIN IMMEDIATE');
          return true;
        } catch {
          return false;
        }
      },
      15_000,
      5,
    );
    return async () => {
      other.exec('ROLLBACK');
      other.close();
    };
  }

  it('answers 503 service_unavailable with Retry-After while it lasts, then recovers', async () => {
    const alice = await server.agent('alice');
    expect((await alice.post(SEND, { destination: 'bob', event_name: 'before' })).status).toBe(201);

    const restore = await outOfReach();
    try {
      const refused = await alice.post(SEND, { destination: 'bob', event_name: 'during' });
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error).toMatchObject({ code: 'service_unavailable' });
      expect(refused.body.meta.request_id).toBe(refused.headers.get('x-request-id'));
      expect(refused.text).not.toMatch(/ECONNREFUSED|SQLITE|terminated|127\.0\.0\.1/);
      if (dialect === 'postgres') {
        // Reads, and a key the server has not seen yet (its lookup needs the database), too.
        expect((await alice.get('/api/v1/messaging/sessions')).status).toBe(503);
        expect((await alice.withKey('sk_never_seen_before_0123456789').get('/api/v1/auth/whoami')).status).toBe(503);
        const ready = await server.api.get('/readyz', { key: null });
        expect([ready.status, ready.body.checks.database]).toEqual([503, 'down']);
      }
    } finally {
      await restore();
    }
    await waitFor(async () => (await alice.post(SEND, { destination: 'bob', event_name: 'after' })).status === 201, 15_000, 100);
    expect((await server.api.get('/readyz', { key: null })).body).toMatchObject({ status: 'ready', checks: { database: 'up' } });
  }, 30_000);
});

// Issue 20 item 10: a full disk gave 500 on writes and /readyz 200. SQLite's max_page_count on
// the server's own connection makes every write that needs a new page fail with SQLITE_FULL,
// as a full disk does. (PostgreSQL's disk_full, 53100, maps the same way: see the table above.)
describe('storage faults: no space left [sqlite]', () => {
  const server = useServer('sqlite');

  async function limitPages(max: number | null): Promise<void> {
    const db = server.app.platform.database.db;
    const { rows } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    await sql.raw(`PRAGMA max_page_count = ${max ?? rows[0]!.page_count}`).execute(db);
  }

  it('answers 507 insufficient_storage on writes, reads still work, /readyz says so until a write succeeds', async () => {
    const alice = await server.agent('alice');
    expect((await alice.post(SEND, { destination: 'bob', event_name: 'small' })).status).toBe(201);

    await limitPages(null);
    const big = { destination: 'bob', event_name: 'big', payload: { text: 'x'.repeat(200_000) } };
    const refused = await alice.post(SEND, big);
    expect(refused.status).toBe(507);
    expect(refused.body.error).toMatchObject({ code: 'insufficient_storage' });
    expect(refused.text).not.toMatch(/SQLITE/);
    const ready = await server.api.get('/readyz', { key: null });
    expect([ready.status, ready.body]).toEqual([
      507,
      {
        status: 'insufficient_storage',
        reason: 'No storage space is left for writes: reads are served, writes answer 507 insufficient_storage',
        checks: { database: 'up', blobs: 'full', listen: 'in_process', workers: 'up' },
      },
    ]);
    expect((await alice.get('/api/v1/messaging/sessions')).status).toBe(200);

    await limitPages(1_073_741_823);
    expect((await alice.post(SEND, big)).status).toBe(201);
    expect((await server.api.get('/readyz', { key: null })).body).toMatchObject({ status: 'ready', checks: { blobs: 'up' } });
  });
});

// Issue 34 item 12: after a crash on a full disk the server exited at start ("database or disk
// is full") until space was freed by hand. Of the start's writes, only the node registration
// writes on a database that is already set up (the observer's data_version shows that the
// migrations, the admin key and the settings commit nothing); on a full disk it is postponed
// and the node starts in the degraded mode it has while running.
describe('storage faults: a start on a full disk [sqlite]', () => {
  let database: TestDatabase;
  let server: TestServer | undefined;
  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
  });
  afterAll(async () => {
    await server?.close();
    await database?.drop();
  });

  it('serves reads, answers writes 507, says why in /readyz, and registers the node once a write succeeds', async () => {
    const adminKey = `sk_test_${'f'.repeat(32)}`;
    const first = await startServer('sqlite', { database, adminKey });
    const alice = await first.agent('alice');
    expect((await alice.post(SEND, { destination: 'bob', event_name: 'before' })).status).toBe(201);
    const template = await first.app.platform.database.db.selectFrom('cluster_nodes').selectAll().executeTakeFirstOrThrow();
    await first.close();

    // Node ids sort by creation time: these sort before the id the next start gives its node, so
    // the filler rows take the very leaf pages its row would go to.
    const fillerIds = Array.from({ length: 20_000 }, () => newId('node'));
    const observer = new BetterSqlite3(path.join(database.dataDir, 'switchboard.db'), { readonly: true });
    const versionBefore = observer.pragma('data_version', { simple: true });
    let filled = 0;
    try {
      server = await startServer('sqlite', {
        database,
        adminKey,
        beforeListen: async (app) => {
          expect(observer.pragma('data_version', { simple: true })).toBe(versionBefore);
          // The database file may not grow (a full disk), and the node table's last pages are full.
          const db = app.platform.database.db;
          const { rows } = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
          await sql.raw(`PRAGMA max_page_count = ${rows[0]!.page_count}`).execute(db);
          const now = Date.now();
          for (const id of fillerIds) {
            try {
              await db
                .insertInto('cluster_nodes')
                .values({ ...template, id, pid: process.pid, started_at: now, last_seen_at: now, stopped_at: null })
                .execute();
              filled += 1;
            } catch (err) {
              if ((err as { code?: string }).code === 'SQLITE_FULL') return;
              throw err;
            }
          }
          throw new Error('the database never filled up');
        },
      });
    } finally {
      observer.close();
    }
    expect(filled).toBeGreaterThan(0);

    const ready = await server.api.get('/readyz', { key: null });
    expect(ready.status).toBe(507);
    expect(ready.body).toMatchObject({ status: 'insufficient_storage', checks: { database: 'up', blobs: 'full' } });
    expect(ready.body.reason).toMatch(/node registration/);
    const reader = server.api.withKey(alice.key);
    expect((await reader.get('/api/v1/messaging/sessions')).status).toBe(200);
    const big = { destination: 'bob', event_name: 'big', payload: { text: 'x'.repeat(200_000) } };
    const refused = await reader.post(SEND, big);
    expect([refused.status, refused.body.error?.code]).toEqual([507, 'insufficient_storage']);
    expect(refused.body.meta.request_id).toBe(refused.headers.get('x-request-id'));

    // Space again: the filler goes, and the first write that succeeds has the node registered.
    const db = server.app.platform.database.db;
    await sql.raw('PRAGMA max_page_count = 1073741823').execute(db);
    await db.deleteFrom('cluster_nodes').where('id', 'in', fillerIds.slice(0, filled)).execute();
    expect((await reader.post(SEND, big)).status).toBe(201);
    await waitFor(async () => (await server!.api.get('/readyz', { key: null })).status === 200, 10_000, 50);
    const nodes = await server.api.get('/api/v1/cluster/nodes');
    expect(nodes.body.data.map((node: { pid: number; status: string }) => node.status).sort()).toEqual(['down', 'up']);
  }, 60_000);
});

// A schema change cannot wait for space like the start-up writes: the code would run against
// tables it does not know. The start fails, saying why, and leaves nothing half-applied.
describe('storage faults: a migration on a full disk [sqlite]', () => {
  it('fails the start with a message that says so, and applies whole once there is room', async () => {
    const database = await createTestDatabase('sqlite');
    const handle = openDatabase({ databaseUrl: null, dataDir: database.dataDir });
    try {
      await sql.raw('PRAGMA max_page_count = 8').execute(handle.db);
      await expect(migrateToLatest(handle)).rejects.toThrow(
        /could not be applied: no storage space is left \(database or disk is full\)\. Free space and start again/,
      );
      await sql.raw('PRAGMA max_page_count = 1073741823').execute(handle.db);
      expect((await migrateToLatest(handle)).length).toBe(Object.keys(migrations).length);
    } finally {
      await handle.close();
      await database.drop();
    }
  });
});
