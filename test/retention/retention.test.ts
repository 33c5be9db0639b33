import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { acknowledge, receive, receiveOne } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const M = '/api/v1/messaging';
const P = '/api/v1/coordination/plans';
const R = '/api/v1/coordination/runs';
const DAY_MS = 86_400_000;

/** The value of one series of the exposition text (0 when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describeEachDialect('retention', (dialect) => {
  const database = useTestDatabase(dialect);

  /** Passes until no rule has a full batch left; answers the most messages one pass deleted. */
  async function drain(server: TestServer): Promise<{ mostMessages: number }> {
    let mostMessages = 0;
    for (let passes = 1; passes <= 100; passes++) {
      const pass = await server.app.retention.pass();
      expect(pass).not.toBeNull();
      mostMessages = Math.max(mostMessages, pass!.deleted.messages ?? 0);
      if (!pass!.more) return { mostMessages };
    }
    throw new Error('retention never ran out of work');
  }

  async function states(server: TestServer, ids: string[]): Promise<Record<string, string | undefined>> {
    const rows = await server.app.platform.database.db.selectFrom('messages').select(['id', 'state']).where('id', 'in', ids).execute();
    return Object.fromEntries(ids.map((id) => [id, rows.find((row) => row.id === id)?.state]));
  }

  async function runs(server: TestServer, ids: string[]) {
    const db = server.app.platform.database.db;
    const [kept, steps, events] = await Promise.all([
      db.selectFrom('runs').select(['id', 'status']).where('id', 'in', ids).execute(),
      db.selectFrom('run_steps').select('run_id').where('run_id', 'in', ids).execute(),
      db.selectFrom('run_events').select('run_id').where('run_id', 'in', ids).execute(),
    ]);
    return {
      kept: kept.map((run) => run.id).sort(),
      steps: new Set(steps.map((s) => s.run_id)),
      events: new Set(events.map((e) => e.run_id)),
    };
  }

  // Forty days of traffic in a few steps: a busy machine needs more than the default 30 s.
  it('deletes finished messages, dead letters and finished runs past their settings, in batches; never what is unfinished', async () => {
    const clock = new FakeClock(Date.now());
    const env = {
      SWITCHBOARD_RETENTION_BATCH_SIZE: '2',
      SWITCHBOARD_MESSAGE_RETENTION_DAYS: '7',
      SWITCHBOARD_DEAD_LETTER_RETENTION_DAYS: '30',
      SWITCHBOARD_RUN_RETENTION_DAYS: '20',
    };
    const server = await startServer(dialect, { database: database(), clock, env });
    try {
      const producer = await server.agent('rt-producer');
      const worker = await server.agent('rt-worker');
      const send = async (body: Record<string, unknown>) => {
        const res = await producer.post(`${M}/send`, { event_name: 'job', ...body });
        expect(res.status, res.text).toBe(201);
        return res.body.data.message_id as string;
      };

      // Day 0: five acknowledged, one delivered at most once, one dead letter, one never received, one received later.
      const acked: string[] = [];
      for (let i = 0; i < 5; i++) acked.push(await send({ destination: 'rt-worker', idempotency_key: `k${i}` }));
      for (const message of await receive(worker, 'rt-worker', 1, 10)) await acknowledge(worker, message.message_id);
      const atMostOnce = await send({ destination: 'rt-worker', delivery_semantic: 'at_most_once' });
      expect((await receiveOne(worker, 'rt-worker')).message_id).toBe(atMostOnce);
      const dead = await send({ destination: 'rt-worker', max_deliveries: 1 });
      expect((await receiveOne(worker, 'rt-worker')).message_id).toBe(dead);
      expect((await worker.post(`${M}/reject`, { message_id: dead, reason: 'no' })).status).toBe(200);
      const pending = await send({ destination: 'rt-idle' });
      const leased = await send({ destination: 'rt-lease' });
      expect(await states(server, [...acked, atMostOnce, dead])).toEqual({
        ...Object.fromEntries(acked.map((id) => [id, 'acked'])),
        [atMostOnce]: 'delivered',
        [dead]: 'dead',
      });

      // Day 0: three finished runs and one waiting for a person.
      const quick = await server.api.post(P, {
        alias: `rt-quick-${dialect}`,
        steps: [{ id: 'only', type: 'transform', output: { ok: true } }],
      });
      const gate = await server.api.post(P, {
        alias: `rt-gate-${dialect}`,
        steps: [{ id: 'gate', type: 'human_approval', prompt: 'go?' }],
      });
      const long = await server.api.post(P, {
        alias: `rt-long-${dialect}`,
        retention_days: 40,
        steps: [{ id: 'only', type: 'transform', output: {} }],
      });
      expect(long.body.data.retention_days).toBe(40);
      expect(quick.body.data.retention_days).toBeNull();
      const kept = (await server.api.post(R, { plan_id: long.body.data.id, input: {} })).body.data.id as string;
      const finished: string[] = [];
      for (let i = 0; i < 3; i++) finished.push((await server.api.post(R, { plan_id: quick.body.data.id, input: {} })).body.data.id);
      const waiting = (await server.api.post(R, { plan_id: gate.body.data.id, input: {} })).body.data.id as string;
      await waitFor(async () => {
        const statuses = await Promise.all([...finished, waiting].map(async (id) => (await server.api.get(`${R}/${id}`)).body.data.status));
        return statuses.join() === 'completed,completed,completed,waiting' &&
          (await server.api.get(`${R}/${kept}`)).body.data.status === 'completed'
          ? true
          : null;
      });

      // Day 8: the finished messages go (two at a time), the dead letter and the runs stay.
      clock.advance(8 * DAY_MS);
      const fresh = await send({ destination: 'rt-worker' });
      await acknowledge(worker, (await receiveOne(worker, 'rt-worker')).message_id);
      expect((await receiveOne(await server.agent('rt-lease'), 'rt-lease')).message_id).toBe(leased);
      // Batches of two per state: the five acknowledged take three passes. (The app's own worker
      // may run one of them, so the total is read from the metrics below.)
      expect((await drain(server)).mostMessages).toBeLessThanOrEqual(3);
      expect(await states(server, [...acked, atMostOnce, dead, pending, leased, fresh])).toEqual({
        ...Object.fromEntries(acked.map((id) => [id, undefined])),
        [atMostOnce]: undefined,
        [dead]: 'dead',
        [pending]: 'pending',
        [leased]: 'pending',
        [fresh]: 'acked',
      });
      expect((await runs(server, [...finished, waiting])).kept).toEqual([...finished, waiting].sort());
      // An idempotency key goes with its message: the same key sends anew.
      const again = await producer.post(`${M}/send`, { destination: 'rt-worker', event_name: 'job', idempotency_key: 'k0' });
      expect(again.body.data.message_id).not.toBe(acked[0]);
      const metrics = (await server.api.get('/metrics')).text;
      expect(sample(metrics, 'switchboard_retention_deleted_total{table="messages"}')).toBe(6);

      // Day 21: the finished runs go with their steps and timelines; the waiting one stays.
      clock.advance(13 * DAY_MS);
      await drain(server);
      const left = await runs(server, [...finished, waiting]);
      expect(left.kept).toEqual([waiting]);
      expect((await runs(server, [kept])).kept).toEqual([kept]);
      expect([...left.steps]).toEqual([waiting]);
      expect([...left.events]).toEqual([waiting]);
      expect(await states(server, [dead, pending, leased, fresh])).toMatchObject({
        [dead]: 'dead',
        [pending]: 'pending',
        [fresh]: undefined,
      });

      // Day 31: the dead letter goes too; what was never acknowledged stays.
      clock.advance(10 * DAY_MS);
      await drain(server);
      expect(await states(server, [dead, pending])).toEqual({ [dead]: undefined, [pending]: 'pending' });
      expect((await runs(server, [kept, waiting])).kept).toEqual([kept, waiting].sort());
      const after = (await server.api.get('/metrics')).text;
      expect(sample(after, 'switchboard_retention_deleted_total{table="messages"}')).toBe(8);
      expect(sample(after, 'switchboard_retention_deleted_total{table="runs"}')).toBe(3);

      // Day 41: the run of the plan that keeps its runs 40 days goes.
      clock.advance(10 * DAY_MS);
      await drain(server);
      expect((await runs(server, [kept, waiting])).kept).toEqual([waiting]);
    } finally {
      await server.close();
    }
  }, 90_000);

  it('deletes finished routine executions past the run retention; an unfinished one stays', async () => {
    const clock = new FakeClock(Date.now());
    const server = await startServer(dialect, { database: database(), clock, env: { SWITCHBOARD_RUN_RETENTION_DAYS: '20' } });
    try {
      const E = '/core/api/v1/routines/executions';
      const agent = await server.agent('rt-routine');
      const created = await server.api.post('/core/api/v1/routines', {
        name: 'rt yearly',
        trigger_type: 'cron',
        cron_expression: '0 0 1 1 *',
        target_agent: 'rt-routine',
      });
      const trigger = async () =>
        (await server.api.post(`/core/api/v1/routines/${created.body.data.id}/trigger`, {})).body.data.id as string;
      const done = await trigger();
      await acknowledge(agent, (await receiveOne(agent, 'rt-routine')).message_id);
      await waitFor(async () => ((await server.api.get(`${E}/${done}`)).body.data.status === 'success' ? true : null));
      // Nobody receives this one: it stays pending until its deadline, and nothing deletes it before it ends.
      clock.advance(21 * DAY_MS);
      const open = await trigger();
      await drain(server);
      expect((await server.api.get(`${E}/${done}`)).status).toBe(404);
      expect((await server.api.get(`${E}/${open}`)).body.data.status).toBe('pending');
      const metrics = (await server.api.get('/metrics')).text;
      expect(sample(metrics, 'switchboard_retention_deleted_total{table="routine_executions"}')).toBe(1);
    } finally {
      await server.close();
    }
  });

  it('deletes spent signature nonces, expired sessions, old sign-in failures and trigger and routine fires past the run retention; keeps the live ones', async () => {
    const clock = new FakeClock(Date.now());
    const server = await startServer(dialect, { database: database(), clock, env: { SWITCHBOARD_RUN_RETENTION_DAYS: '20' } });
    try {
      const db = server.app.platform.database.db;
      const now = clock.now();
      const old = now - 21 * DAY_MS;
      await db
        .insertInto('signature_nonces')
        .values([
          { signature_hash: 'spent', expires_at: now - 1 },
          { signature_hash: 'live', expires_at: now + 60_000 },
        ])
        .execute();
      await db
        .insertInto('auth_sessions')
        .values([
          { id: 'ses_expired', token_hash: 'h1', user_id: null, key_id: null, created_at: old, expires_at: now - 1 },
          { id: 'ses_live', token_hash: 'h2', user_id: null, key_id: null, created_at: now, expires_at: now + DAY_MS },
        ])
        .execute();
      await db
        .insertInto('sign_in_failures')
        .values([
          { bucket: 'old', failed_at: now - DAY_MS },
          { bucket: 'recent', failed_at: now - 1_000 },
        ])
        .execute();
      const fire = (id: string, created_at: number) => ({ id, scheduled_for: created_at, reason: null, created_at });
      await db
        .insertInto('trigger_fires')
        .values([
          { ...fire('tf_old', old), outcome: 'started', trigger_id: 'trg_x', run_id: null },
          { ...fire('tf_new', now), outcome: 'started', trigger_id: 'trg_x', run_id: null },
        ])
        .execute();
      await db
        .insertInto('routine_fires')
        .values([
          { ...fire('rf_old', old), outcome: 'fired', routine_id: 'rtn_x', execution_id: null },
          { ...fire('rf_new', now), outcome: 'fired', routine_id: 'rtn_x', execution_id: null },
        ])
        .execute();
      // The server's own retention worker may take them first: what is left is what this checks.
      await drain(server);
      const left = async (table: string, column: string) =>
        (await sql<{ key: string }>`select ${sql.ref(column)} as key from ${sql.table(table)}`.execute(db)).rows.map((row) => row.key);
      expect(await left('signature_nonces', 'signature_hash')).toEqual(['live']);
      expect(await left('auth_sessions', 'id')).toEqual(['ses_live']);
      expect(await left('sign_in_failures', 'bucket')).toEqual(['recent']);
      expect(await left('trigger_fires', 'id')).toEqual(['tf_new']);
      expect(await left('routine_fires', 'id')).toEqual(['rf_new']);
    } finally {
      await server.close();
    }
  });

  it('runs on one node at a time: another node skips its passes while the leader is up', async () => {
    const clock = new FakeClock(Date.now());
    const a = await startServer(dialect, { database: database(), clock });
    const b = await startServer(dialect, { database: database(), clock, adminKey: a.adminKey });
    try {
      // The node with the smaller id leads; the other skips.
      const [passA, passB] = [await a.app.retention.pass(), await b.app.retention.pass()];
      expect([passA, passB].filter((pass) => pass === null)).toHaveLength(1);
      const [holder, other] = passA === null ? [b, a] : [a, b];
      expect(await holder.app.retention.pass()).not.toBeNull();
      expect(await other.app.retention.pass()).toBeNull();
      // A leader that stops hands over at once.
      await holder.close();
      expect(await other.app.retention.pass()).not.toBeNull();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
