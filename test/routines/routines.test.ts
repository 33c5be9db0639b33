import { expect, it } from 'vitest';
import { acknowledge, receive, receiveOne, reject } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const R = '/core/api/v1/routines';

describeEachDialect('routines', (dialect) => {
  const server = useServer(dialect);

  it('creates a cron routine with defaults and computed next_run_at', async () => {
    const res = await server.api.post(R, {
      name: 'nightly report',
      trigger_type: 'cron',
      cron_expression: '0 3 * * *',
      timezone: 'Europe/Paris',
      target_agent: 'reporter',
      payload: { kind: 'daily' },
    });
    expect(res.status).toBe(201);
    const routine = res.body.data;
    expect(routine).toMatchObject({
      name: 'nightly report',
      trigger_type: 'cron',
      timezone: 'Europe/Paris',
      enabled: true,
      catch_up: 'latest',
      overlap: 'allow',
      timeout_seconds: 3600,
      last_run_at: null,
      created_by: 'admin',
    });
    expect(routine.id).toMatch(/^rtn_/);
    // 03:00 in Paris is 01:00 or 02:00 UTC depending on DST.
    expect(new Date(routine.next_run_at).getUTCHours()).toBeGreaterThanOrEqual(1);
    expect(new Date(routine.next_run_at).getUTCMinutes()).toBe(0);
    expect(routine).not.toHaveProperty('webhook_token');
    const fetched = await server.api.get(`${R}/${routine.id}`);
    expect(fetched.body.data).toEqual(routine);
    const preview = await server.api.get(`${R}/${routine.id}/preview?count=3`);
    expect(preview.body.data).toHaveLength(3);
    expect(preview.body.data[0]).toBe(routine.next_run_at);
  });

  it('validates fields with per-field details', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ trigger_type: 'cron', target_agent: 'a', cron_expression: '* * * * *' }, 'name'],
      [{ name: 'x', trigger_type: 'cron', target_agent: 'a' }, 'cron_expression'],
      [{ name: 'x', trigger_type: 'cron', target_agent: 'a', cron_expression: '99 * * * *' }, 'cron_expression'],
      [{ name: 'x', trigger_type: 'cron', target_agent: 'a', cron_expression: '* * * * *', timezone: 'Nowhere/City' }, 'timezone'],
      [{ name: 'x', trigger_type: 'hourly', target_agent: 'a' }, 'trigger_type'],
      [{ name: 'x', trigger_type: 'webhook', target_agent: 'a', cron_expression: '* * * * *' }, 'cron_expression'],
      [{ name: 'x', trigger_type: 'webhook' }, 'target_agent'],
      [{ name: 'x', trigger_type: 'webhook', target_agent: 'a', colour: 'red' }, 'colour'],
    ];
    for (const [body, field] of cases) {
      const res = await server.api.post(R, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    }
    expect((await server.api.get(`${R}?limit=500`)).body.data.filter((r: { name: string }) => r.name === 'x')).toEqual([]);
  });

  it('fires on a seconds-field schedule; pause stops fires and resume restarts them', async () => {
    const agent = await server.agent('ticker');
    const created = await server.api.post(R, {
      name: 'every second',
      trigger_type: 'cron',
      cron_expression: '* * * * * *',
      target_agent: 'ticker',
      payload: { n: 1 },
    });
    const id = created.body.data.id;
    const message = await receiveOne(agent, 'ticker');
    expect(message.event_name).toBe('routine.execute');
    expect(message.source).toBe('switchboard');
    expect(message.payload).toMatchObject({ routine_id: id, trigger: 'cron', payload: { n: 1 } });
    await acknowledge(agent, message.message_id, { summary: 'ok' });
    const execution = await waitFor(async () => {
      const res = await server.api.get(`/core/api/v1/routines/executions/${message.payload.execution_id}`);
      return res.body.data.status === 'success' ? res.body.data : null;
    });
    // The agent's JSON output as it sent it, not its text.
    expect(execution).toMatchObject({ routine_id: id, trigger: 'cron', output: { summary: 'ok' } });
    expect(execution.scheduled_for).toMatch(/\.000Z$/);
    expect(execution.started_at).not.toBeNull();
    expect(execution.completed_at).not.toBeNull();

    const paused = await server.api.patch(`${R}/${id}`, { enabled: false });
    expect(paused.body.data).toMatchObject({ enabled: false, next_run_at: null });
    // Drain what fired before the pause, then nothing more arrives.
    for (let drained = await receive(agent, 'ticker', 1, 100); drained.length > 0; drained = await receive(agent, 'ticker', 1, 100)) {
      for (const m of drained) await acknowledge(agent, m.message_id);
    }
    expect(await receive(agent, 'ticker', 2)).toEqual([]);
    expect((await server.api.get(`${R}/${id}`)).body.data.enabled).toBe(false);

    const resumed = await server.api.patch(`${R}/${id}`, { enabled: true });
    expect(resumed.body.data.next_run_at).not.toBeNull();
    const again = await receiveOne(agent, 'ticker');
    expect(again.payload.routine_id).toBe(id);
    await server.api.delete(`${R}/${id}`);
  });

  it('runs manually with a payload override (202) and reports success with the output', async () => {
    const agent = await server.agent('manual-agent');
    const created = await server.api.post(R, {
      name: 'on demand',
      trigger_type: 'cron',
      cron_expression: '0 0 1 1 *',
      target_agent: 'manual-agent',
      payload: { default: true },
    });
    const id = created.body.data.id;
    const triggered = await server.api.post(`${R}/${id}/trigger`, { payload: { custom: 42 } });
    expect(triggered.status).toBe(202);
    expect(triggered.body.data).toMatchObject({ routine_id: id, status: 'pending', trigger: 'manual', payload: { custom: 42 } });
    const message = await receiveOne(agent, 'manual-agent');
    expect(message.payload).toEqual({ routine_id: id, execution_id: triggered.body.data.id, trigger: 'manual', payload: { custom: 42 } });
    const running = await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`);
    expect(running.body.data.status).toBe('running');
    await acknowledge(agent, message.message_id, 'all done');
    await waitFor(
      async () => (await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`)).body.data.status === 'success',
    );
    const done = await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`);
    expect(done.body.data.output).toBe('all done');
    // No body at all: the routine's payload.
    const plain = await server.api.post(`${R}/${id}/trigger`);
    expect(plain.status).toBe(202);
    expect(plain.body.data.payload).toEqual({ default: true });
    expect((await server.api.get(`${R}/${id}`)).body.data.last_run_at).not.toBeNull();
  });

  it('fails an execution when the agent rejects without requeue, with the reason as output', async () => {
    const agent = await server.agent('grumpy');
    const created = await server.api.post(R, { name: 'doomed', trigger_type: 'webhook', target_agent: 'grumpy' });
    const triggered = await server.api.post(`${R}/${created.body.data.id}/trigger`, {});
    const message = await receiveOne(agent, 'grumpy');
    await reject(agent, message.message_id, 'cannot parse input', false);
    await waitFor(
      async () => (await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`)).body.data.status === 'failed',
    );
    const failed = await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`);
    expect(failed.body.data.output).toContain('cannot parse input');
    const list = await server.api.get(`${R}/${created.body.data.id}/executions?status=failed`);
    expect(list.body.data.map((e: { id: string }) => e.id)).toEqual([triggered.body.data.id]);
    expect((await server.api.get(`${R}/${created.body.data.id}/executions?status=success`)).body.data).toEqual([]);
    // Failing routines: those whose latest execution failed; a newer one that has not failed takes it off the list.
    const failing = async () => (await server.api.get(`${R}?last_status=failed&limit=500`)).body.data.map((r: { id: string }) => r.id);
    expect(await failing()).toContain(created.body.data.id);
    await server.api.post(`${R}/${created.body.data.id}/trigger`, {});
    expect(await failing()).not.toContain(created.body.data.id);
    expect((await server.api.get(`${R}?last_status=pending&limit=500`)).body.data.map((r: { id: string }) => r.id)).toContain(
      created.body.data.id,
    );
  });

  it('fails an execution that outlives timeout_seconds', async () => {
    const created = await server.api.post(R, { name: 'slow', trigger_type: 'webhook', target_agent: 'absent-agent', timeout_seconds: 1 });
    const triggered = await server.api.post(`${R}/${created.body.data.id}/trigger`, {});
    const failed = await waitFor(async () => {
      const res = await server.api.get(`/core/api/v1/routines/executions/${triggered.body.data.id}`);
      return res.body.data.status === 'failed' ? res.body.data : null;
    }, 5000);
    expect(failed.output).toMatch(/timed out after 1 s/);
  });

  it('fires webhook routines without auth, 404 for unknown tokens, 409 when paused, and rotates tokens', async () => {
    const agent = await server.agent('hooked');
    const created = await server.api.post(R, { name: 'hook', trigger_type: 'webhook', target_agent: 'hooked' });
    const { webhook_url, webhook_token, id } = created.body.data;
    expect(webhook_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(webhook_url).toBe(`${server.url}/core/api/v1/routines/webhook/${webhook_token}`);
    expect((await server.api.get(`${R}/${id}`)).body.data).not.toHaveProperty('webhook_token');

    const fired = await server.api.post(`/core/api/v1/routines/webhook/${webhook_token}`, { order: 7, items: ['a'] }, { key: null });
    expect(fired.status).toBe(202);
    expect(fired.body.data.execution_id).toMatch(/^exe_/);
    const message = await receiveOne(agent, 'hooked');
    expect(message.payload).toMatchObject({ trigger: 'webhook', payload: { order: 7, items: ['a'] } });

    expect((await server.api.post('/core/api/v1/routines/webhook/not-a-token', {}, { key: null })).status).toBe(404);
    await server.api.patch(`${R}/${id}`, { enabled: false });
    const paused = await server.api.post(`/core/api/v1/routines/webhook/${webhook_token}`, {}, { key: null });
    expect(paused.status).toBe(409);
    expect(paused.body.error.code).toBe('conflict');
    await server.api.patch(`${R}/${id}`, { enabled: true });

    const rotated = await server.api.post(`${R}/${id}/rotate-token`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.webhook_token).not.toBe(webhook_token);
    expect((await server.api.post(`/core/api/v1/routines/webhook/${webhook_token}`, {}, { key: null })).status).toBe(404);
    expect((await server.api.post(`/core/api/v1/routines/webhook/${rotated.body.data.webhook_token}`, {}, { key: null })).status).toBe(202);
  });

  it('lists with filters and pagination, deletes executions and routines', async () => {
    const created = await server.api.post(R, { name: 'listed', trigger_type: 'webhook', target_agent: 'lister', enabled: false });
    const webhooks = await server.api.get(`${R}?trigger_type=webhook&enabled=false&limit=500`);
    expect(webhooks.body.data.map((r: { id: string }) => r.id)).toContain(created.body.data.id);
    for (const r of webhooks.body.data) expect(r).toMatchObject({ trigger_type: 'webhook', enabled: false });
    const page1 = await server.api.get(`${R}?limit=1`);
    expect(page1.body.meta.limit).toBe(1);
    expect(page1.body.data).toHaveLength(1);
    expect((await server.api.get(`${R}?enabled=maybe`)).status).toBe(400);

    await server.api.patch(`${R}/${created.body.data.id}`, { enabled: true });
    const execution = await server.api.post(`${R}/${created.body.data.id}/trigger`, {});
    const removed = await server.api.delete(`/core/api/v1/routines/executions/${execution.body.data.id}`);
    expect(removed.body.data).toEqual({ id: execution.body.data.id, deleted: true });
    expect((await server.api.get(`/core/api/v1/routines/executions/${execution.body.data.id}`)).status).toBe(404);
    expect((await server.api.delete(`${R}/${created.body.data.id}`)).status).toBe(200);
    expect((await server.api.get(`${R}/${created.body.data.id}`)).status).toBe(404);
    expect((await server.api.post(`${R}/${created.body.data.id}/trigger`, {})).status).toBe(404);
  });

  it('skips a slot while the previous execution runs (overlap: skip) and records it', async () => {
    const created = await server.api.post(R, {
      name: 'no overlap',
      trigger_type: 'cron',
      cron_expression: '* * * * * *',
      target_agent: 'never-acks',
      overlap: 'skip',
    });
    const id = created.body.data.id;
    const fires = await waitFor(async () => {
      const res = await server.api.get(`${R}/${id}/fires?limit=50`);
      return res.body.data.some((f: { outcome: string }) => f.outcome === 'skipped') ? res.body.data : null;
    }, 6000);
    await server.api.patch(`${R}/${id}`, { enabled: false });
    const skipped = fires.filter((f: { outcome: string }) => f.outcome === 'skipped');
    expect(skipped[0].reason).toMatch(/overlap/);
    const executions = await server.api.get(`${R}/${id}/executions`);
    expect(executions.body.meta.total).toBe(1);
  });

  it('never fires a slot that is already in the ledger, even when next_run_at is set back', async () => {
    const created = await server.api.post(R, {
      name: 'ledger',
      trigger_type: 'cron',
      cron_expression: '* * * * *',
      target_agent: 'ledger-agent',
      catch_up: 'all',
    });
    const id = created.body.data.id;
    const { db } = server.app.platform.database;
    const minute = (back: number) => Math.floor(Date.now() / 60_000) * 60_000 - back * 60_000;
    const rewind = async (to: number, total: number) => {
      await db.updateTable('routines').set({ next_run_at: to }).where('id', '=', id).execute();
      await server.app.platform.notifier.notify('routines:changed');
      return waitFor(async () => {
        const res = await server.api.get(`${R}/${id}/fires?limit=100`);
        return res.body.meta.total >= total ? (res.body.data as { scheduled_for: string; outcome: string }[]) : null;
      });
    };
    // Three missed minutes fire (catch_up: all); set back two minutes further, only the two
    // new slots fire: the three in the ledger are not written or executed again.
    const first = await rewind(minute(2), 3);
    await rewind(minute(4), first.length + 2);
    await server.api.patch(`${R}/${id}`, { enabled: false });
    const fires = (await server.api.get(`${R}/${id}/fires?limit=100`)).body.data as { scheduled_for: string; outcome: string }[];
    const slots = fires.map((f) => f.scheduled_for);
    expect(new Set(slots).size).toBe(slots.length);
    expect(fires.every((f) => f.outcome === 'fired')).toBe(true);
    const executions = (await server.api.get(`${R}/${id}/executions?limit=100`)).body.data as { scheduled_for: string }[];
    expect(executions.map((e) => e.scheduled_for).sort()).toEqual([...slots].sort());
  });
});

describeEachDialect('routines across restarts', (dialect) => {
  it.each(['latest', 'all', 'none'] as const)('catches up missed slots with catch_up=%s', async (policy) => {
    const first = await startServer(dialect);
    const created = await first.api.post(R, {
      name: `catch up ${policy}`,
      trigger_type: 'cron',
      cron_expression: '* * * * *',
      target_agent: 'sleeper',
      catch_up: policy,
    });
    const id = created.body.data.id;
    await first.app.close();
    // Pretend the server was down for five minutes: the routine's due time is in the past.
    const reopened = await startServer(dialect, { database: first.database, adminKey: first.adminKey });
    try {
      const past = Date.now() - 5 * 60_000 - 30_000;
      await reopened.app.platform.database.db
        .updateTable('routines')
        .set({ next_run_at: Math.floor(past / 60_000) * 60_000 + 60_000 })
        .where('id', '=', id)
        .execute();
      await reopened.app.platform.notifier.notify('routines:changed');
      const fires = await waitFor(async () => {
        const res = await reopened.api.get(`${R}/${id}/fires?limit=100`);
        return res.body.meta.total >= 5 ? res.body.data : null;
      });
      const fired = fires.filter((f: { outcome: string }) => f.outcome === 'fired').length;
      const skipped = fires.filter((f: { outcome: string }) => f.outcome === 'skipped').length;
      if (policy === 'latest') expect([fired, skipped]).toEqual([1, fires.length - 1]);
      if (policy === 'all') expect(skipped).toBe(0);
      if (policy === 'none') expect(fired).toBeLessThanOrEqual(1);
      const executions = await reopened.api.get(`${R}/${id}/executions?limit=100`);
      expect(executions.body.meta.total).toBe(fired);
      // Caught up: the next run is no earlier than this minute's slot (which, read just past a minute's
      // turn, may be due but not fired yet), never one of the missed ones.
      const thisMinute = Math.floor(Date.now() / 60_000) * 60_000;
      expect(new Date((await reopened.api.get(`${R}/${id}`)).body.data.next_run_at).getTime()).toBeGreaterThanOrEqual(thisMinute);
    } finally {
      await reopened.close();
      await first.database.drop();
    }
  });

  it.runIf(dialect === 'postgres')('two schedulers on one database fire each slot once', async () => {
    const a = await startServer(dialect);
    const b = await startServer(dialect, { database: a.database, adminKey: a.adminKey });
    try {
      const created = await a.api.post(R, {
        name: 'contended',
        trigger_type: 'cron',
        cron_expression: '* * * * * *',
        target_agent: 'pair-agent',
      });
      const id = created.body.data.id;
      await waitFor(async () => (await a.api.get(`${R}/${id}/fires`)).body.meta.total >= 4, 10_000);
      await a.api.patch(`${R}/${id}`, { enabled: false });
      const fires = (await a.api.get(`${R}/${id}/fires?limit=500`)).body.data as { scheduled_for: string }[];
      const slots = fires.map((f) => f.scheduled_for);
      expect(new Set(slots).size).toBe(slots.length);
      const executions = (await a.api.get(`${R}/${id}/executions?limit=500`)).body.data as { scheduled_for: string }[];
      const executed = executions.map((e) => e.scheduled_for);
      expect(new Set(executed).size).toBe(executed.length);
    } finally {
      await b.close();
      await a.close();
    }
  });
});
