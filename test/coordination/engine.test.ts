import { expect, it } from 'vitest';
import { inlineSchemaRefs } from '../../scripts/inline-schema-refs.js';
import { acknowledge, receive, receiveOne, runAgent, type Handling, type InboxMessage } from '../helpers/agent.js';
import { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { P, R, useCoordination } from './fixture.js';
import { startServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { expectTimelineMatches } from './timeline.js';

/** The run engine beyond the happy paths: concurrency, dead letters, timelines, cancel and redrive of maps, restarts. */
describeEachDialect('coordination engine', (dialect) => {
  const { server, loops, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const eventsOf = async (id: string) => (await server.api.get(`${R}/${id}/events?limit=500`)).body.data as any[];
  const step = (run: { steps: { id: string }[] }, id: string) => run.steps.find((s) => s.id === id) as any;

  async function agent(
    id: string,
    handle: (m: InboxMessage) => Handling | Promise<Handling> = (m) => ({ output: { echo: m.payload.input } }),
  ) {
    const client = await server.agent(id);
    const loop = runAgent(client, id, handle);
    loops.push(loop);
    return { client, loop };
  }

  /** Receives until `count` messages are leased to the agent (none acknowledged). */
  async function leaseAll(client: Api, agentId: string, count: number): Promise<InboxMessage[]> {
    const leased: InboxMessage[] = [];
    await waitFor(async () => {
      leased.push(...(await receive(client, agentId, 1)));
      return leased.length >= count;
    }, 10_000);
    return leased;
  }

  it('starts independent steps together; current_step is the first in plan order; steps carry every field', async () => {
    const worker = unique('holder');
    const client = await server.agent(worker);
    const id = await plan({
      steps: [
        { id: 'left', type: 'agent', agent: worker, input: { side: 'L' } },
        { id: 'right', type: 'agent', agent: worker, input: { side: 'R' } },
        {
          id: 'join',
          type: 'transform',
          output: { l: '{{steps.left.output.side}}', r: '{{steps.right.output.side}}' },
          depends_on: ['left', 'right'],
        },
      ],
    });
    const run = await start(id);
    expect(run.current_step).toBe('left');
    expect(run.steps.map((s: any) => [s.id, s.status])).toEqual([
      ['left', 'running'],
      ['right', 'running'],
      ['join', 'pending'],
    ]);
    for (const s of run.steps) {
      expect(Object.keys(s).sort()).toEqual(
        [
          'agent',
          'attempt',
          'checkpoint',
          'blocked_by',
          'child_run_id',
          'completed_at',
          'error',
          'id',
          'input',
          'output',
          'reused',
          'started_at',
          'status',
          'type',
        ].sort(),
      );
    }
    expect(step(run, 'left')).toMatchObject({
      type: 'agent',
      attempt: 1,
      agent: worker,
      input: { side: 'L' },
      output: null,
      error: null,
      completed_at: null,
    });
    expect(step(run, 'join')).toMatchObject({ type: 'transform', attempt: 0, started_at: null, input: null });

    // Both messages are out before either is acknowledged.
    const leased = await leaseAll(client, worker, 2);
    expect(leased.map((m) => m.payload.step_id).sort()).toEqual(['left', 'right']);
    for (const m of leased) await acknowledge(client, m.message_id, { side: m.payload.input.side });
    const done = await finished(run.id);
    expect(done.output).toEqual({ join: { l: 'L', r: 'R' } });
    expect(Date.parse(step(done, 'left').completed_at)).toBeGreaterThanOrEqual(Date.parse(step(done, 'left').started_at));
    expectTimelineMatches(done, await eventsOf(run.id));
  });

  it('a message dead-lettered after its last delivery fails the attempt; the retry then completes the step', async () => {
    const worker = unique('stubborn');
    const client = await server.agent(worker);
    const id = await plan({ steps: [{ id: 'job', type: 'agent', agent: worker, retry: { max_attempts: 2 } }] });
    const run = await start(id);
    // Rejected with requeue: redelivered (retry_count grows) until max_deliveries (5), then dead-lettered.
    for (let delivery = 0; delivery < 5; delivery++) {
      const message = await receiveOne(client, worker);
      expect(message.payload.step_id).toBe('job');
      expect(message.retry_count).toBe(delivery);
      const res = await client.post('/api/v1/messaging/reject', {
        message_id: message.message_id,
        reason: 'flaky disk',
        requeue: true,
        delay_seconds: 0,
      });
      expect(res.status, res.text).toBe(200);
    }
    const retried = await waitFor(async () => {
      const current = await getRun(run.id);
      return step(current, 'job').attempt === 2 ? current : null;
    });
    expect(step(retried, 'job').status).toBe('running');
    // The dead letter names the work it was sent for: the run's step and its attempt.
    const letters = (await server.api.get(`/api/v1/messaging/dead-letters?agent_id=${worker}`)).body.data;
    expect(letters).toMatchObject([{ reason: expect.any(String), origin: { kind: 'plan_step', ref: `${run.id}|job|1` } }]);
    const second = await receiveOne(client, worker);
    expect(second.retry_count).toBe(0);
    await acknowledge(client, second.message_id, { ok: true });
    const done = await finished(run.id);
    expect(step(done, 'job')).toMatchObject({ status: 'completed', attempt: 2, output: { ok: true }, error: null });
    const types = (await eventsOf(run.id)).filter((e) => e.step_id === 'job').map((e) => e.type);
    expect(types).toEqual(['step.started', 'step.retrying', 'step.started', 'step.completed']);
    expect((await eventsOf(run.id)).find((e) => e.type === 'step.retrying').detail.error).toMatch(/^flaky disk/);
  });

  it('human input: 409 before the step is reached and once answered; 404 for an unknown run or step', async () => {
    const id = await plan({
      steps: [
        { id: 'gate', type: 'human_approval', prompt: 'start?' },
        { id: 'form', type: 'human_input', prompt: 'name?', schema: { type: 'object', required: ['name'] }, depends_on: ['gate'] },
      ],
    });
    const run = await start(id);
    const early = await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { name: 'x' } });
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('conflict');
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).body.data.status).toBe('waiting');
    expect((await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { name: 'Ada' } })).body.data.status).toBe('completed');
    expect((await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { name: 'Bob' } })).status).toBe(409);
    expect(step(await getRun(run.id), 'form').output).toEqual({ name: 'Ada' });
    expect((await server.api.post(`${R}/${run.id}/steps/ghost/input`, { data: {} })).status).toBe(404);
    expect((await server.api.post(`${R}/run_missing/steps/form/input`, { data: {} })).status).toBe(404);
    expect((await server.api.post(`${R}/${run.id}/steps/form/input`, { data: 'not an object' })).status).toBe(400);
  });

  it('the events timeline matches the steps of a run that branches, maps, retries and waits on people', async () => {
    const flaky = unique('flaky');
    let calls = 0;
    await agent(flaky, (m) => (++calls === 1 ? { reject: 'warming up', requeue: false } : { output: { n: m.payload.input.n * 10 } }));
    const id = await plan({
      steps: [
        { id: 'route', type: 'condition', expression: 'input.express', then: 'fast', else: 'slow' },
        { id: 'fast', type: 'transform', output: { mode: 'fast' } },
        { id: 'slow', type: 'transform', output: { mode: 'slow' } },
        { id: 'only-slow', type: 'transform', output: { x: 1 }, depends_on: ['slow'] },
        {
          id: 'map',
          type: 'parallel',
          for_each: '{{input.ns}}',
          max_concurrency: 1,
          depends_on: ['fast', 'slow'],
          step: { type: 'agent', agent: flaky, input: { n: '{{item}}' }, retry: { max_attempts: 2 } },
        },
        { id: 'gate', type: 'human_approval', prompt: 'Accept {{steps.map.output}}?', depends_on: ['map'] },
        { id: 'note', type: 'human_input', prompt: 'Why?', schema: { type: 'object' }, depends_on: ['gate'] },
      ],
    });
    const run = await start(id, { express: true, ns: [1, 2] });
    const waiting = await waitFor(async () => {
      const current = await getRun(run.id);
      return current.status === 'waiting' ? current : null;
    }, 15_000);
    expect(step(waiting, 'only-slow').status).toBe('skipped');
    expect(step(waiting, 'map[0]')).toMatchObject({ status: 'completed', attempt: 2, output: { n: 10 } });
    expect(step(waiting, 'gate').input.prompt).toBe('Accept [{"n":10},{"n":20}]?');
    expectTimelineMatches(waiting, await eventsOf(run.id));

    await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true });
    const running = await getRun(run.id);
    expect(running.status).toBe('waiting');
    expectTimelineMatches(running, await eventsOf(run.id));
    await server.api.post(`${R}/${run.id}/steps/note/input`, { data: { why: 'fine' } });
    const done = await getRun(run.id);
    expect(done.status).toBe('completed');
    const events = await eventsOf(run.id);
    expectTimelineMatches(done, events);
    expect(events.filter((e) => e.step_id === null).map((e) => e.type)).toEqual(['run.started', 'run.waiting', 'run.completed']);
    expect(events.filter((e) => e.step_id === 'gate').map((e) => e.type)).toEqual(['step.waiting', 'step.approved', 'step.completed']);
    expect(events.filter((e) => e.step_id === 'note').map((e) => e.type)).toEqual([
      'step.waiting',
      'step.input_received',
      'step.completed',
    ]);
    expect(events.find((e) => e.type === 'step.skipped' && e.step_id === 'slow').detail.reason).toMatch(/condition 'route'/);
  });

  it('the timeline of failing and cancelled runs matches their steps (one start per attempt, even when a step fails as it starts)', async () => {
    const badWait = await plan({
      steps: [
        { id: 'later', type: 'wait', until: '{{input.at}}' },
        { id: 'after', type: 'transform', output: {}, depends_on: ['later'] },
      ],
    });
    const failedWait = await start(badWait, { at: 'someday' });
    expect(failedWait.status).toBe('failed');
    expectTimelineMatches(failedWait, await eventsOf(failedWait.id));

    const badMap = await plan({
      steps: [{ id: 'map', type: 'parallel', for_each: '{{input.items}}', step: { type: 'transform', output: { x: '{{item}}' } } }],
    });
    const failedMap = await start(badMap, { items: 'not a list' });
    expect(failedMap.status).toBe('failed');
    expect(step(failedMap, 'map').error).toMatch(/not an array/);
    expectTimelineMatches(failedMap, await eventsOf(failedMap.id));

    const holder = unique('holder');
    await server.agent(holder);
    const held = await plan({
      steps: [
        { id: 'a', type: 'agent', agent: holder },
        { id: 'w', type: 'wait', event: { topic: unique('never') } },
        { id: 'b', type: 'agent', agent: holder, depends_on: ['a'] },
      ],
    });
    const run = await start(held);
    const cancelled = (await server.api.post(`${R}/${run.id}/cancel`)).body.data;
    expect(cancelled.steps.map((s: any) => s.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expectTimelineMatches(cancelled, await eventsOf(run.id));
  });

  it('a run failing in the transition that started an agent step withdraws the step message', async () => {
    const worker = unique('bystander');
    const client = await server.agent(worker);
    const id = await plan({
      steps: [
        { id: 'job', type: 'agent', agent: worker },
        { id: 'boom', type: 'transform', expression: '$error("boom")' },
      ],
    });
    const run = await start(id);
    expect(run.status).toBe('failed');
    expect(step(run, 'job').status).toBe('cancelled');
    expect(step(run, 'boom').error).toMatch(/boom/);
    expect(await receive(client, worker, 1)).toEqual([]);
    expectTimelineMatches(run, await eventsOf(run.id));
  });

  it('cancel withdraws every in-flight for_each item and a later event no longer resumes the run', async () => {
    const worker = unique('mapper');
    const client = await server.agent(worker);
    const topic = unique('resume');
    const id = await plan({
      steps: [
        {
          id: 'map',
          type: 'parallel',
          for_each: '{{input.items}}',
          max_concurrency: 2,
          step: { type: 'agent', agent: worker, input: { item: '{{item}}' } },
        },
        { id: 'wait', type: 'wait', event: { topic } },
      ],
    });
    const run = await start(id, { items: ['a', 'b', 'c'] });
    expect(run.steps.map((s: any) => [s.id, s.status])).toEqual([
      ['map', 'running'],
      ['map[0]', 'running'],
      ['map[1]', 'running'],
      ['map[2]', 'pending'],
      ['wait', 'running'],
    ]);
    const leased = await leaseAll(client, worker, 2);
    const cancelled = await server.api.post(`${R}/${run.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.steps.every((s: any) => s.status === 'cancelled')).toBe(true);
    expect(cancelled.body.data.error).toBe('cancelled by admin');
    // The leased messages are withdrawn: acknowledging them changes nothing.
    for (const m of leased) await client.post('/api/v1/messaging/acknowledge', { message_id: m.message_id, output: { late: true } });
    await server.api.post('/api/v1/messaging/publish', { topic, payload: {} });
    const after = await getRun(run.id);
    expect(after.status).toBe('cancelled');
    expect(after.steps.map((s: any) => s.output)).toEqual([null, null, null, null, null]);
    expect(await receive(client, worker, 0)).toEqual([]);
    expect((await server.api.post(`${R}/${run.id}/cancel`)).status).toBe(409);
    expect((await server.api.post(`${R}/${run.id}/redrive`)).status).toBe(409);
  });

  it('redrive re-runs only the failed for_each items; the completed ones keep their output', async () => {
    const worker = unique('picky');
    const seen: string[] = [];
    let healthy = false;
    await agent(worker, (m) => {
      seen.push(m.payload.input.item);
      return m.payload.input.item === 'b' && !healthy
        ? { reject: 'b is broken', requeue: false }
        : { output: { got: m.payload.input.item } };
    });
    const id = await plan({
      steps: [
        {
          id: 'map',
          type: 'parallel',
          for_each: '{{input.items}}',
          max_concurrency: 1,
          step: { type: 'agent', agent: worker, input: { item: '{{item}}' } },
        },
        { id: 'count', type: 'transform', expression: '$count(steps.map.output)', depends_on: ['map'] },
      ],
    });
    const run = await start(id, { items: ['a', 'b', 'c'] });
    const failed = await finished(run.id, 'failed');
    expect(failed.steps.map((s: any) => [s.id, s.status])).toEqual([
      ['map', 'failed'],
      ['map[0]', 'completed'],
      ['map[1]', 'failed'],
      ['map[2]', 'pending'],
      ['count', 'pending'],
    ]);
    expect(failed.error).toMatch(/map\[1\]/);
    healthy = true;
    const redriven = await server.api.post(`${R}/${run.id}/redrive`);
    expect(redriven.status).toBe(200);
    expect(redriven.body.data.status).toBe('running');
    const done = await finished(run.id);
    expect(step(done, 'map').output).toEqual([{ got: 'a' }, { got: 'b' }, { got: 'c' }]);
    expect(step(done, 'count').output).toBe(3);
    expect(seen).toEqual(['a', 'b', 'b', 'c']);
    const types = (await eventsOf(run.id)).filter((e) => e.step_id === null).map((e) => e.type);
    expect(types).toEqual(['run.started', 'run.failed', 'run.redriven', 'run.completed']);
  });

  it('adaptive runs stop re-routing after max_revisions', async () => {
    const capability = unique('ocr');
    const agents = [unique('ocr-a'), unique('ocr-b'), unique('ocr-c')];
    for (const [i, id] of agents.entries()) {
      const { client } = await agent(id, () => ({ reject: `${id} failed`, requeue: false }));
      await client.post('/api/v1/discovery/capabilities', { agent_id: id, capability });
      await client.post('/api/v1/discovery/heartbeat', { agent_id: id, load: i / 10 });
    }
    const id = await plan({ steps: [{ id: 'read', type: 'agent', capability, strategy: 'least_loaded' }] });
    const run = await finished((await start(id, {}, { adaptive: { enabled: true, max_revisions: 1 } })).id, 'failed');
    expect(run.adaptive).toEqual({ enabled: true, max_revisions: 1 });
    expect(run.revisions).toEqual([
      expect.objectContaining({ step: 'read', change: { action: 'reroute', from_agent: agents[0], to_agent: agents[1] } }),
    ]);
    expect(step(run, 'read')).toMatchObject({ status: 'failed', agent: agents[1], error: `${agents[1]} failed` });
    const none = await finished((await start(id, {}, { adaptive: { enabled: true, max_revisions: 0 } })).id, 'failed');
    expect(none.revisions).toEqual([]);
    // A step that names its agent is not re-routed.
    const named = await plan({ steps: [{ id: 'read', type: 'agent', agent: agents[2] }] });
    expect((await finished((await start(named, {}, { adaptive: { enabled: true } })).id, 'failed')).revisions).toEqual([]);
  });

  it('a failed or directly cancelled child run fails its sub_plan step and the parent run', async () => {
    const child = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?' }] });
    const parent = await plan({
      steps: [
        { id: 'nested', type: 'sub_plan', plan_id: child },
        { id: 'after', type: 'transform', output: {}, depends_on: ['nested'] },
      ],
    });
    const rejected = await start(parent);
    const childOfRejected = step(rejected, 'nested').child_run_id;
    await server.api.post(`${R}/${childOfRejected}/steps/gate/approve`, { approved: false, comment: 'no' });
    const failed = await getRun(rejected.id);
    expect(failed.status).toBe('failed');
    expect(step(failed, 'nested').error).toBe(`sub-plan run ${childOfRejected} failed: step 'gate' failed: rejected by admin: no`);
    expect(step(failed, 'after').status).toBe('pending');

    const cancelledChild = await start(parent);
    const childId = step(cancelledChild, 'nested').child_run_id;
    expect((await server.api.post(`${R}/${childId}/cancel`)).status).toBe(200);
    const parentAfter = await getRun(cancelledChild.id);
    expect(parentAfter.status).toBe('failed');
    expect(step(parentAfter, 'nested').error).toBe(`sub-plan run ${childId} was cancelled`);
    expectTimelineMatches(parentAfter, await eventsOf(cancelledChild.id));
    // Three levels: cancelling the top cancels the grandchild too.
    const top = await plan({ steps: [{ id: 'mid', type: 'sub_plan', plan_id: parent }] });
    const topRun = await start(top);
    const mid = await getRun(step(topRun, 'mid').child_run_id);
    const leaf = step(mid, 'nested').child_run_id;
    expect((await getRun(leaf)).status).toBe('waiting');
    await server.api.post(`${R}/${topRun.id}/cancel`);
    expect((await getRun(mid.id)).status).toBe('cancelled');
    expect((await getRun(leaf)).status).toBe('cancelled');
  });

  it('a condition with only a then branch skips it when false; everything downstream of it only is skipped too', async () => {
    const id = await plan({
      steps: [
        { id: 'check', type: 'condition', expression: 'input.n > 3', then: ['extra'] },
        { id: 'extra', type: 'transform', output: { extra: true } },
        { id: 'more', type: 'transform', output: { more: true }, depends_on: ['extra'] },
        { id: 'always', type: 'transform', output: { always: true }, depends_on: ['check'] },
      ],
    });
    const small = await start(id, { n: 1 });
    expect(small.status).toBe('completed');
    expect(small.steps.map((s: any) => s.status)).toEqual(['completed', 'skipped', 'skipped', 'completed']);
    expect(small.output).toEqual({ always: { always: true } });
    const big = await start(id, { n: 9 });
    expect(big.steps.map((s: any) => s.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(big.output).toEqual({ more: { more: true }, always: { always: true } });
  });

  it('lists runs with limit and offset', async () => {
    const id = await plan({ steps: [{ id: 't', type: 'transform', output: { ok: true } }] });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await start(id, { i })).id);
    const page = await server.api.get(`${R}?plan_id=${id}&status=completed&limit=2&offset=1`);
    expect(page.status).toBe(200);
    expect(page.body.meta).toMatchObject({ total: 5, limit: 2, offset: 1 });
    expect(page.body.data.map((r: any) => r.id)).toEqual([ids[3], ids[2]]);
    expect((await server.api.get(`${R}?plan_id=${id}&status=failed`)).body.meta.total).toBe(0);
  });

  it('lists runs by start time: started_after inclusive, started_before exclusive; a malformed time is 400', async () => {
    const id = await plan({ steps: [{ id: 't', type: 'transform', output: { ok: true } }] });
    const runs: { id: string; started_at: string }[] = [];
    for (let i = 0; i < 3; i++) runs.push(await start(id, { i }));
    const listed = async (query: string) => {
      const res = await server.api.get(`${R}?plan_id=${id}&${query}`);
      expect(res.status, res.text).toBe(200);
      return (res.body.data as { id: string }[]).map((r) => r.id).sort();
    };
    const startedFrom = (at: string) =>
      runs
        .filter((r) => r.started_at >= at)
        .map((r) => r.id)
        .sort();
    const startedBefore = (at: string) =>
      runs
        .filter((r) => r.started_at < at)
        .map((r) => r.id)
        .sort();
    const [first, , last] = runs.map((r) => r.started_at);
    expect(await listed(`started_after=${encodeURIComponent(first!)}`)).toEqual(runs.map((r) => r.id).sort());
    expect(await listed(`started_after=${encodeURIComponent(last!)}`)).toEqual(startedFrom(last!));
    expect(await listed(`started_before=${encodeURIComponent(last!)}`)).toEqual(startedBefore(last!));
    expect(await listed(`started_before=${encodeURIComponent(first!)}`)).toEqual([]);
    const after = new Date(Date.parse(last!) + 1).toISOString();
    expect(await listed(`started_after=${encodeURIComponent(after)}`)).toEqual([]);
    expect(
      await listed(`started_after=${encodeURIComponent(first!)}&started_before=${encodeURIComponent(after)}&status=completed`),
    ).toHaveLength(3);
    const malformed = await server.api.get(`${R}?started_after=yesterday`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details[0].field).toBe('started_after');
  });

  it('PUT with an invalid plan is 400 and keeps the current version', async () => {
    const alias = unique('stable');
    const created = await server.api.post(P, { alias, steps: [{ id: 'a', type: 'transform', output: {} }] });
    const invalid = await server.api.put(`${P}/${alias}`, {
      alias,
      steps: [{ id: 'a', type: 'transform', output: {}, depends_on: ['a'] }],
    });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details[0].field).toBe('steps[0].depends_on');
    expect((await server.api.get(`${P}/${alias}`)).body.data).toEqual(created.body.data);
    expect(
      (await server.api.put(`${P}/plan_missing`, { alias: unique('x'), steps: [{ id: 'a', type: 'transform', output: {} }] })).status,
    ).toBe(404);
  });

  it('the OpenAPI document describes the fields of every step type', async () => {
    const doc = inlineSchemaRefs((await server.api.get('/api/v1/openapi.json')).body);
    const body = doc.paths['/api/v1/coordination/plans'].post.requestBody.content['application/json'].schema;
    const fields = body.properties.steps.items.properties;
    for (const name of [
      'agent',
      'capability',
      'strategy',
      'input',
      'timeout_seconds',
      'retry',
      'prompt',
      'approvers',
      'on_timeout',
      'schema',
      'expression',
      'then',
      'else',
      'steps',
      'for_each',
      'step',
      'max_concurrency',
      'seconds',
      'until',
      'event',
      'plan_id',
      'output',
      'depends_on',
    ]) {
      expect(fields[name], name).toBeDefined();
    }
    expect(JSON.stringify(fields.type)).toContain('sub_plan');
    expect(fields.retry.properties).toHaveProperty('max_attempts');
    expect(fields.retry.properties).toHaveProperty('backoff_seconds');
  });
});

describeEachDialect('coordination runs across a restart', (dialect) => {
  it('a restarted server keeps waiting runs, fires the timers that fell due while it was down, and takes late acknowledgements', async () => {
    const first = await startServer(dialect);
    const worker = await first.agent('restart-worker');
    const plans = [
      {
        alias: 'gated',
        steps: [
          { id: 'gate', type: 'human_approval', prompt: 'go?' },
          { id: 'after', type: 'transform', output: { ok: '{{steps.gate.output.approved}}' }, depends_on: ['gate'] },
        ],
      },
      {
        alias: 'sleepy',
        steps: [
          { id: 'nap', type: 'wait', seconds: 3600 },
          { id: 'after', type: 'transform', output: { woke: true }, depends_on: ['nap'] },
        ],
      },
      {
        alias: 'worked',
        steps: [
          { id: 'job', type: 'agent', agent: 'restart-worker', timeout_seconds: 86_400 },
          { id: 'after', type: 'transform', output: { got: '{{steps.job.output.v}}' }, depends_on: ['job'] },
        ],
      },
    ];
    for (const body of plans) expect((await first.api.post(P, body)).status).toBe(201);
    const gated = (await first.api.post(R, { plan_id: 'gated' })).body.data;
    const sleepy = (await first.api.post(R, { plan_id: 'sleepy' })).body.data;
    const worked = (await first.api.post(R, { plan_id: 'worked' })).body.data;
    const leased = await waitFor(async () => {
      const res = await worker.get('/api/v1/messaging/receive?agent_id=restart-worker&timeout=1&visibility_timeout=43200');
      return (res.body.data.messages as InboxMessage[])[0];
    });
    expect(leased.payload).toMatchObject({ run_id: worked.id, step_id: 'job' });
    await first.app.close();

    // Two hours later: the one-hour wait is overdue.
    const clock = new FakeClock(Date.now() + 2 * 3_600_000);
    const second = await startServer(dialect, { database: first.database, adminKey: first.adminKey, clock });
    try {
      expect((await second.api.get(`${R}/${gated.id}`)).body.data.status).toBe('waiting');
      const approved = await second.api.post(`${R}/${gated.id}/steps/gate/approve`, { approved: true });
      expect(approved.body.data).toMatchObject({ status: 'completed', output: { after: { ok: true } } });
      await second.app.platform.notifier.notify('coordination:changed');
      const woke = await waitFor(async () => {
        const run = (await second.api.get(`${R}/${sleepy.id}`)).body.data;
        return run.status === 'completed' ? run : null;
      });
      expect(woke.output).toEqual({ after: { woke: true } });
      // Leased before the restart (for longer than the clock moved): acknowledged on the new server.
      await acknowledge(new Api(second.url, worker.key), leased.message_id, { v: 7 });
      const done = await waitFor(async () => {
        const run = (await second.api.get(`${R}/${worked.id}`)).body.data;
        return run.status === 'completed' ? run : null;
      });
      expect(done.output).toEqual({ after: { got: 7 } });
    } finally {
      await second.close();
    }
  });
});
