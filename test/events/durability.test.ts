import { describe, expect, it } from 'vitest';
import { Switchboard, type Event } from '../../src/client/index.js';
import { createEventLog } from '../../src/events/index.js';
import { inTransaction } from '../../src/db/tx.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { postgresTestUrl } from '../helpers/database.js';
import { startServer, useServer } from '../helpers/server.js';
import { useTestDatabase } from '../helpers/database.js';
import { waitFor, within } from '../helpers/wait.js';
import { openStream } from './sse.js';

const DAY_MS = 86_400_000;

describeEachDialect('event log across restarts, aborts and dropped connections', (dialect) => {
  const database = useTestDatabase(dialect);

  it('resumes a stream after Last-Event-ID across a server restart, with nothing missed or repeated', async () => {
    const first = await startServer(dialect, { database: database() });
    const stream = await openStream(first.url, first.adminKey, { query: 'type=task.created' });
    const before = (await first.api.post('/core/api/v1/tasks', { title: 'before restart' })).body.data;
    const [seen] = await stream.until(1);
    // Shutdown ends the stream.
    await first.close();
    await within(stream.ended, 5000, 'the stream to end on shutdown');
    expect(seen!.subject).toBe(before.id);

    const second = await startServer(dialect, { database: database(), adminKey: first.adminKey });
    try {
      const missed = (await second.api.post('/core/api/v1/tasks', { title: 'while away' })).body.data;
      const resumed = await openStream(second.url, second.adminKey, { query: 'type=task.created', lastEventId: seen!.id });
      const live = (await second.api.post('/core/api/v1/tasks', { title: 'after resume' })).body.data;
      expect((await resumed.until(2)).map((e) => e.subject)).toEqual([missed.id, live.id]);
      resumed.close();
    } finally {
      await second.close();
    }
  });

  it('keeps no event of an aborted transaction', async () => {
    const server = await startServer(dialect, { database: database() });
    try {
      const { platform } = server.app;
      const log = createEventLog(platform.database, platform.clock, platform.notifier);
      const marker = `aborted-${dialect}`;
      await expect(
        inTransaction(platform.database.db, async (tx) => {
          await log.append(tx, { type: 'task.created', subject: marker, actor: 'test', data: {} });
          throw new Error('abort');
        }),
      ).rejects.toThrow('abort');
      await inTransaction(platform.database.db, (tx) =>
        log.append(tx, { type: 'task.created', subject: `${marker}-kept`, actor: 'test', data: {} }),
      );
      expect((await server.api.get(`/api/v1/events?subject=${marker}`)).body.data).toEqual([]);
      expect((await server.api.get(`/api/v1/events?subject=${marker}-kept`)).body.data).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('the SDK stream resumes by itself after a dropped connection', async () => {
    const server = await startServer(dialect, { database: database() });
    const client = new Switchboard({ url: server.url, apiKey: server.adminKey, maxBackoffMs: 50 });
    const stop = new AbortController();
    let following: Promise<void> | undefined;
    try {
      const received: Event[] = [];
      let opens = 0;
      let drops = 0;
      const opened = server.requestArrival('GET', '/api/v1/events/stream');
      following = (async () => {
        for await (const event of client.events.stream({
          type: 'task.created',
          signal: stop.signal,
          onOpen: () => opens++,
          onDrop: () => drops++,
        })) {
          received.push(event);
          if (received.length === 3) return;
        }
      })();
      await (
        await opened
      ).answered;
      const one = (await server.api.post('/core/api/v1/tasks', { title: 'one' })).body.data;
      await waitFor(() => received.length === 1);
      // Cut every connection: the SDK reconnects with Last-Event-ID. The event appended
      // meanwhile comes from the log directly (the test's own HTTP connections were cut too).
      const reopened = server.requestArrival('GET', '/api/v1/events/stream');
      server.app.http.server.closeAllConnections();
      const { platform } = server.app;
      const two = { id: `two-${dialect}` };
      await inTransaction(platform.database.db, (tx) =>
        createEventLog(platform.database, platform.clock, platform.notifier).append(tx, {
          type: 'task.created',
          subject: two.id,
          actor: 'test',
          data: {},
        }),
      );
      await (
        await reopened
      ).answered;
      const three = (await server.api.post('/core/api/v1/tasks', { title: 'three' })).body.data;
      await within(following, 10_000, 'three events through the SDK');
      expect(received.map((e) => e.subject)).toEqual([one.id, two.id, three.id]);
      expect(opens).toBe(2);
      // The cut said so once (a reader shows it is not live until the reopening).
      expect(drops).toBe(1);
    } finally {
      stop.abort();
      await following?.catch(() => undefined);
      await server.close();
    }
  });

  it('the retention sweep deletes events older than SWITCHBOARD_EVENT_RETENTION_DAYS, oldest first', async () => {
    const clock = new FakeClock(Date.now());
    const env = { SWITCHBOARD_EVENT_RETENTION_DAYS: '30' };
    const first = await startServer(dialect, { database: database(), clock, env });
    const old = (await first.api.post('/core/api/v1/tasks', { title: 'old' })).body.data;
    clock.advance(20 * DAY_MS);
    const recent = (await first.api.post('/core/api/v1/tasks', { title: 'recent' })).body.data;
    await first.close();
    clock.advance(11 * DAY_MS);
    // The sweep runs as the server starts (then hourly).
    const second = await startServer(dialect, { database: database(), clock, env, adminKey: first.adminKey });
    try {
      await waitFor(async () => (await second.api.get(`/api/v1/events?subject=${old.id}`)).body.data.length === 0);
      expect((await second.api.get(`/api/v1/events?subject=${recent.id}`)).body.data).toHaveLength(1);
    } finally {
      await second.close();
    }
  });
});

describeEachDialect('event visibility and limits', (dialect) => {
  const server = useServer(dialect);

  it('an agent sees shared workspace events, not admin-only ones; the stream filters the same way', async () => {
    const agent = await server.agent('watcher');
    const stream = await openStream(server.url, agent.key!);
    const key = (await server.api.post('/api/v1/auth/keys', { agent_id: 'other', role: 'agent' })).body.data;
    const task = (await server.api.post('/core/api/v1/tasks', { title: 'shared' })).body.data;
    const [event] = await stream.until(1);
    expect(event).toMatchObject({ type: 'task.created', subject: task.id });
    expect((await agent.get(`/api/v1/events?subject=${key.id}`)).body.data).toEqual([]);
    expect((await server.api.get(`/api/v1/events?subject=${key.id}`)).body.data).toHaveLength(1);
    stream.close();
  });
});

describe.runIf(postgresTestUrl())('event order on PostgreSQL', () => {
  it('a stream on one node delivers what another node appended, woken by the notifier', async () => {
    const first = await startServer('postgres');
    const second = await startServer('postgres', { database: first.database, adminKey: first.adminKey });
    try {
      const stream = await openStream(first.url, first.adminKey, { query: 'type=task.created' });
      const task = (await second.api.post('/core/api/v1/tasks', { title: 'from the other node' })).body.data;
      // Well within the keep-alive interval (15 s), when the stream would read again anyway.
      const [event] = await stream.until(1, 5000);
      expect(event!.subject).toBe(task.id);
      stream.close();
    } finally {
      await second.close();
      await first.close();
    }
  });

  it('a transaction that appended later waits for one that appended earlier, so a reader in between misses nothing', async () => {
    const server = await startServer('postgres');
    try {
      const { platform } = server.app;
      const log = createEventLog(platform.database, platform.clock, platform.notifier);
      const read: string[] = [];
      let cursor: string | undefined;
      const readOn = async () => {
        const page = (await server.api.get(`/api/v1/events?type=task.created${cursor ? `&after=${cursor}` : ''}`)).body.data as {
          id: string;
          subject: string;
        }[];
        read.push(...page.map((e) => e.subject));
        if (page.length > 0) cursor = page.at(-1)!.id;
      };
      await readOn();
      let releaseFirst!: () => void;
      const firstMayCommit = new Promise<void>((resolve) => (releaseFirst = resolve));
      let firstAppended!: () => void;
      const appendedFirst = new Promise<void>((resolve) => (firstAppended = resolve));
      const first = inTransaction(platform.database.db, async (tx) => {
        await log.append(tx, { type: 'task.created', subject: 'lower', actor: 'test', data: {} });
        firstAppended();
        await firstMayCommit;
      });
      await appendedFirst;
      let secondDone = false;
      const second = inTransaction(platform.database.db, (tx) =>
        log.append(tx, { type: 'task.created', subject: 'higher', actor: 'test', data: {} }),
      ).then(() => (secondDone = true));
      // The second append waits on the log's lock, held by the first until it commits.
      await waitFor(async () => {
        const { rows } = await platform.database.pool!.query(
          "select count(*)::int as n from pg_locks where locktype = 'advisory' and not granted",
        );
        return rows[0].n > 0;
      });
      await readOn();
      expect(secondDone).toBe(false);
      releaseFirst();
      await first;
      await second;
      await readOn();
      expect(read).toEqual(['lower', 'higher']);
      const ids = (await server.api.get('/api/v1/events?type=task.created')).body.data.map((e: { id: string }) => e.id);
      expect(ids).toEqual([...ids].sort());
    } finally {
      await server.close();
    }
  });
});
