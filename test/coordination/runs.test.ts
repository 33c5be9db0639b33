import { expect, it } from 'vitest';
import { receiveOne, reject, runAgent, type Handling, type InboxMessage } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { P, R, useCoordination } from './fixture.js';
import { waitFor } from '../helpers/wait.js';

describeEachDialect('coordination runs', (dialect) => {
  const { server, loops, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const step = (run: { steps: { id: string }[] }, id: string) => run.steps.find((s) => s.id === id) as any;

  /** An agent that answers plan steps with `handle` (default: echo the input). */
  async function agent(
    id: string,
    handle: (m: InboxMessage) => Handling | Promise<Handling> = (m) => ({ output: { echo: m.payload.input, by: id } }),
  ) {
    const client = await server.agent(id);
    const loop = runAgent(client, id, handle);
    loops.push(loop);
    return { client, loop };
  }

  it('runs agent steps in dependency order; templates keep JSON types and interpolate text', async () => {
    const a = unique('counter');
    const b = unique('writer');
    await agent(a, () => ({ output: { count: 3, items: ['x', 'y'] } }));
    const { loop: writer } = await agent(b);
    const id = await plan({
      steps: [
        { id: 'count', type: 'agent', agent: a, input: { topic: '{{input.topic}}' } },
        {
          id: 'write',
          type: 'agent',
          agent: b,
          depends_on: ['count'],
          input: {
            n: '{{steps.count.output.count}}',
            first: '{{steps.count.output.items[0]}}',
            line: 'found {{steps.count.output.count}} about {{input.topic}}',
            all: '{{steps.count.output}}',
          },
        },
      ],
    });
    const run = await start(id, { topic: 'owls' });
    expect(run.status).toBe('running');
    expect(run.current_step).toBe('count');
    expect(run.id).toMatch(/^run_/);
    const done = await finished(run.id);
    expect(step(done, 'write').input).toEqual({ n: 3, first: 'x', line: 'found 3 about owls', all: { count: 3, items: ['x', 'y'] } });
    expect(done.output).toEqual({
      write: { echo: { n: 3, first: 'x', line: 'found 3 about owls', all: { count: 3, items: ['x', 'y'] } }, by: b },
    });
    expect(done.current_step).toBeNull();
    expect(done.completed_at).not.toBeNull();
    const message = writer.handled[0]!;
    expect(message.event_name).toBe('plan.step.execute');
    expect(message.source).toBe('switchboard');
    expect(message.payload).toMatchObject({ run_id: run.id, step_id: 'write', plan_id: id });

    const events = (await server.api.get(`${R}/${run.id}/events`)).body.data.map((e: any) => [e.type, e.step_id]);
    expect(events).toEqual([
      ['run.started', null],
      ['step.started', 'count'],
      ['step.completed', 'count'],
      ['step.started', 'write'],
      ['step.completed', 'write'],
      ['run.completed', null],
    ]);
  });

  it('picks an agent by capability through discovery and honours the plan output template', async () => {
    const worker = unique('summarizer');
    const capability = unique('text.summarize');
    const { client } = await agent(worker, (m) => ({ output: { summary: `short ${m.payload.input.text}` } }));
    await client.post('/api/v1/discovery/capabilities', { agent_id: worker, capability });
    await client.post('/api/v1/discovery/heartbeat', { agent_id: worker });
    const id = await plan({
      steps: [{ id: 'sum', type: 'agent', capability, input: { text: '{{input.text}}' } }],
      output: { result: '{{steps.sum.output.summary}}', source: 'plan' },
    });
    const done = await finished((await start(id, { text: 'story' })).id);
    expect(step(done, 'sum').agent).toBe(worker);
    expect(done.output).toEqual({ result: 'short story', source: 'plan' });
  });

  it('a condition runs one branch and skips the other and what only it leads to', async () => {
    const id = await plan({
      steps: [
        { id: 'check', type: 'condition', expression: 'input.amount > 100', then: 'big', else: 'small' },
        { id: 'big', type: 'transform', output: { size: 'big' } },
        { id: 'small', type: 'transform', output: { size: 'small' } },
        { id: 'after-small', type: 'transform', output: { note: 'only after small' }, depends_on: ['small'] },
        { id: 'join', type: 'transform', expression: '{"chosen": steps.big.output.size}', depends_on: ['big', 'small'] },
      ],
    });
    const done = await finished((await start(id, { amount: 500 })).id);
    expect(step(done, 'check').output).toEqual({ result: true, branch: 'then' });
    expect(step(done, 'big').status).toBe('completed');
    expect(step(done, 'small').status).toBe('skipped');
    expect(step(done, 'after-small').status).toBe('skipped');
    expect(step(done, 'join').output).toEqual({ chosen: 'big' });

    const other = await finished((await start(id, { amount: 5 })).id);
    expect(step(other, 'big').status).toBe('skipped');
    expect(step(other, 'after-small').status).toBe('completed');
  });

  it('parallel steps run together; for_each maps items with bounded concurrency and ordered output', async () => {
    const w = unique('mapper');
    // Items in flight are the agent's messages not yet acknowledged, as its inbox counts them
    // when it takes each one (the run dispatches the first two in one transaction).
    const inFlight: number[] = [];
    await agent(w, async (m) => {
      const [inbox] = (await server.api.get(`/api/v1/messaging/inboxes?agent_id=${w}`)).body.data;
      inFlight.push(inbox.pending + inbox.leased);
      return { output: { doubled: m.payload.input.n * 2 } };
    });
    const id = await plan({
      steps: [
        { id: 'both', type: 'parallel', steps: ['left', 'right'] },
        { id: 'left', type: 'transform', output: { side: 'L' } },
        { id: 'right', type: 'transform', output: { side: 'R' } },
        {
          id: 'map',
          type: 'parallel',
          for_each: '{{input.numbers}}',
          max_concurrency: 2,
          step: { type: 'agent', agent: w, input: { n: '{{item}}' } },
        },
        { id: 'total', type: 'transform', expression: '$sum(steps.map.output.doubled)', depends_on: ['map', 'both'] },
      ],
    });
    const done = await finished((await start(id, { numbers: [1, 2, 3, 4, 5] })).id);
    expect(step(done, 'both').output).toEqual({ left: { side: 'L' }, right: { side: 'R' } });
    expect(step(done, 'map').output).toEqual([2, 4, 6, 8, 10].map((d) => ({ doubled: d })));
    expect(step(done, 'map[4]')).toMatchObject({ status: 'completed', input: { n: 5 } });
    expect(step(done, 'total').output).toBe(30);
    expect(inFlight).toHaveLength(5);
    expect(Math.max(...inFlight)).toBe(2);

    const empty = await finished((await start(id, { numbers: [] })).id);
    expect(step(empty, 'map').output).toEqual([]);
  });

  it('human approval: yes completes, no fails the run, approvers are enforced, wrong step type is 409', async () => {
    const boss = unique('boss');
    const bossApi = await server.agent(boss);
    const intern = await server.agent(unique('intern'));
    const id = await plan({
      steps: [
        { id: 'ok', type: 'human_approval', prompt: 'Spend {{input.amount}}?', approvers: [boss] },
        { id: 'after', type: 'transform', output: { approved: '{{steps.ok.output.approved}}' }, depends_on: ['ok'] },
      ],
    });
    const run = await start(id, { amount: 10 });
    expect(run.status).toBe('waiting');
    expect(step(run, 'ok')).toMatchObject({ status: 'waiting', input: { prompt: 'Spend 10?', approvers: [boss] } });
    const denied = await intern.post(`${R}/${run.id}/steps/ok/approve`, { approved: true });
    expect(denied.status).toBe(403);
    expect((await bossApi.post(`${R}/${run.id}/steps/after/approve`, { approved: true })).status).toBe(409);
    expect((await bossApi.post(`${R}/${run.id}/steps/nope/approve`, { approved: true })).status).toBe(404);
    expect((await bossApi.post(`${R}/${run.id}/steps/ok/input`, { data: {} })).status).toBe(403); // an agent answers no human_input (approvals:decide)
    const approved = await bossApi.post(`${R}/${run.id}/steps/ok/approve`, { approved: true, comment: 'fine' });
    expect(approved.status).toBe(200);
    expect(approved.body.data.status).toBe('completed');
    expect(step(approved.body.data, 'ok').output).toMatchObject({ approved: true, comment: 'fine', decided_by: boss });
    expect(approved.body.data.output).toEqual({ after: { approved: true } });
    expect((await bossApi.post(`${R}/${run.id}/steps/ok/approve`, { approved: true })).status).toBe(409);

    const second = await start(id, { amount: 1e6 });
    const rejected = await server.api.post(`${R}/${second.id}/steps/ok/approve`, { approved: false, comment: 'too much' });
    expect(rejected.body.data.status).toBe('failed');
    expect(step(rejected.body.data, 'ok')).toMatchObject({ status: 'failed', error: 'rejected by admin: too much' });
    expect(step(rejected.body.data, 'after').status).toBe('pending');
  });

  it('takes steps written as the spec shows them: human steps without prompt or schema, a condition without branches', async () => {
    const alias = unique('spec-shapes');
    const created = await server.api.post(P, {
      alias,
      steps: [
        { id: 'gate', type: 'human_approval' },
        { id: 'form', type: 'human_input', depends_on: ['gate'] },
        { id: 'big', type: 'condition', expression: 'steps.form.output.amount > 100', depends_on: ['form'] },
        { id: 'report', type: 'transform', output: { big: '{{steps.big.output.result}}' }, depends_on: ['big'] },
      ],
    });
    expect(created.status, created.text).toBe(201);
    const prompt = `Approve step gate of plan ${alias}?`;
    expect(created.body.data.steps[0]).toEqual({ id: 'gate', type: 'human_approval', prompt });
    expect(created.body.data.steps[1]).toMatchObject({
      prompt: `Provide the input of step form of plan ${alias}`,
      schema: { type: 'object' },
    });

    for (const [amount, big] of [
      [250, true],
      [5, false],
    ] as const) {
      const run = await start(created.body.data.id);
      expect(step(run, 'gate')).toMatchObject({ status: 'waiting', input: { prompt } });
      const approved = await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true });
      expect(step(approved.body.data, 'form')).toMatchObject({ status: 'waiting', input: { schema: { type: 'object' } } });
      // Any JSON object is accepted.
      const submitted = await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { amount, note: ['free', { form: true }] } });
      expect(submitted.status, submitted.text).toBe(200);
      expect(submitted.body.data.status).toBe('completed');
      expect(step(submitted.body.data, 'big').output).toMatchObject({ result: big });
      expect(submitted.body.data.output).toEqual({ report: { big } });
    }
  });

  it('an approval timeout applies on_timeout', async () => {
    const id = await plan({
      steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?', timeout_seconds: 1, on_timeout: 'approve' }],
    });
    const done = await finished((await start(id)).id);
    expect(step(done, 'gate').output).toMatchObject({ approved: true, decided_by: 'switchboard', comment: 'approved on timeout' });
  });

  it('on_timeout reject and fail both fail the run, with what happened', async () => {
    const rejecting = await plan({
      steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?', timeout_seconds: 1, on_timeout: 'reject' }],
    });
    const rejected = await finished((await start(rejecting)).id, 'failed');
    expect(step(rejected, 'gate')).toMatchObject({ error: 'rejected by switchboard: rejected on timeout', output: { approved: false } });
    const failing = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?', timeout_seconds: 1 }] });
    const failed = await finished((await start(failing)).id, 'failed');
    expect(step(failed, 'gate').error).toBe('no decision within 1 s');
  });

  it('a wait until a templated time resumes then; a value that is no time fails the step', async () => {
    const id = await plan({ steps: [{ id: 'later', type: 'wait', until: '{{input.at}}' }] });
    const at = new Date(Date.now() + 1000).toISOString();
    const run = await start(id, { at });
    expect(run.status).toBe('waiting');
    expect(step(run, 'later').input).toEqual({ until: at });
    const done = await finished(run.id);
    expect(step(done, 'later').output).toEqual({ waited_until: at });
    const bad = await start(id, { at: 'tomorrow-ish' });
    expect(bad.status).toBe('failed');
    expect(step(bad, 'later').error).toMatch(/not an ISO 8601 time/);
  });

  it('human input is validated against the step schema', async () => {
    const id = await plan({
      steps: [
        {
          id: 'form',
          type: 'human_input',
          prompt: 'Shipping address',
          schema: {
            type: 'object',
            required: ['city', 'zip'],
            properties: { city: { type: 'string' }, zip: { type: 'string', pattern: '^[0-9]{5}$' } },
          },
        },
      ],
    });
    const run = await start(id);
    expect(run.status).toBe('waiting');
    const bad = await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { city: 'Lyon', zip: 'abc' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([expect.objectContaining({ field: 'data.zip' })]);
    const missing = await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { city: 'Lyon' } });
    expect(missing.status).toBe(400);
    // A missing property is named itself, as the request schemas' problems are: a form shows it at its field.
    expect(missing.body.error.details).toEqual([{ field: 'data.zip', message: 'is required' }]);
    expect((await getRun(run.id)).status).toBe('waiting');
    const good = await server.api.post(`${R}/${run.id}/steps/form/input`, { data: { city: 'Lyon', zip: '69001' } });
    expect(good.status).toBe(200);
    expect(good.body.data.status).toBe('completed');
    expect(good.body.data.output).toEqual({ form: { city: 'Lyon', zip: '69001' } });
  });

  it('retries a rejected step with backoff, then fails the run when attempts run out', async () => {
    const flaky = unique('flaky');
    let calls = 0;
    await agent(flaky, () => (++calls < 2 ? { reject: 'busy', requeue: false } : { output: { ok: true } }));
    const id = await plan({ steps: [{ id: 'try', type: 'agent', agent: flaky, retry: { max_attempts: 3, backoff_seconds: 0.2 } }] });
    const done = await finished((await start(id)).id);
    expect(step(done, 'try')).toMatchObject({ status: 'completed', attempt: 2 });
    const types = (await server.api.get(`${R}/${done.id}/events`)).body.data.map((e: any) => e.type);
    expect(types).toContain('step.retrying');

    const hopeless = unique('hopeless');
    await agent(hopeless, () => ({ reject: 'cannot', requeue: false }));
    const failing = await plan({ steps: [{ id: 'try', type: 'agent', agent: hopeless, retry: { max_attempts: 2 } }] });
    const failed = await finished((await start(failing)).id, 'failed');
    expect(step(failed, 'try')).toMatchObject({ status: 'failed', attempt: 2, error: 'cannot' });
    expect(failed.error).toBe("step 'try' failed: cannot");
  });

  it('times out a step whose agent never acknowledges, and withdraws the message', async () => {
    const silent = unique('silent');
    const client = await server.agent(silent);
    const id = await plan({ steps: [{ id: 'slow', type: 'agent', agent: silent, timeout_seconds: 1 }] });
    const run = await start(id);
    const first = await receiveOne(client, silent);
    const failed = await finished(run.id, 'failed');
    expect(step(failed, 'slow').error).toBe('timed out after 1 s without an acknowledgement');
    // A late acknowledgement changes nothing.
    await client.post('/api/v1/messaging/acknowledge', { message_id: first.message_id, output: { late: true } });
    expect((await getRun(run.id)).status).toBe('failed');
  });

  it('cancels running and waiting runs (409 once finished) and withdraws in-flight messages', async () => {
    const idle = unique('idle');
    const client = await server.agent(idle);
    const id = await plan({ steps: [{ id: 'work', type: 'agent', agent: idle }] });
    const run = await start(id);
    const cancelled = await server.api.post(`${R}/${run.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe('cancelled');
    expect(step(cancelled.body.data, 'work').status).toBe('cancelled');
    const inbox = await client.get(`/api/v1/messaging/receive?agent_id=${idle}&timeout=0`);
    expect(inbox.body.data.messages).toEqual([]);
    expect((await server.api.post(`${R}/${run.id}/cancel`)).status).toBe(409);

    const waitingPlan = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?' }] });
    const waiting = await start(waitingPlan);
    const other = await server.agent(unique('stranger'));
    expect((await other.post(`${R}/${waiting.id}/cancel`)).status).toBe(403);
    expect((await server.api.post(`${R}/${waiting.id}/cancel`)).body.data.status).toBe('cancelled');
    expect((await server.api.post(`${R}/${waiting.id}/steps/gate/approve`, { approved: true })).status).toBe(409);
    expect((await server.api.post(`${R}/run_nope/cancel`)).status).toBe(404);
  });

  it('a sub_plan step waits for its child run; cancelling the parent cancels the child', async () => {
    const child = await plan({
      steps: [{ id: 'shout', type: 'transform', expression: '$uppercase(input.word)' }],
      output: { loud: '{{steps.shout.output}}' },
    });
    const parent = await plan({ steps: [{ id: 'nested', type: 'sub_plan', plan_id: child, input: { word: '{{input.word}}' } }] });
    const done = await finished((await start(parent, { word: 'hey' })).id);
    expect(step(done, 'nested').output).toEqual({ loud: 'HEY' });
    const childRun = await getRun(step(done, 'nested').child_run_id);
    expect(childRun).toMatchObject({ status: 'completed', parent_run_id: done.id, input: { word: 'hey' } });

    const slowChild = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'go?' }] });
    const slowParent = await plan({ steps: [{ id: 'nested', type: 'sub_plan', plan_id: slowChild }] });
    const run = await start(slowParent);
    const childId = step(run, 'nested').child_run_id;
    expect((await getRun(childId)).status).toBe('waiting');
    expect((await server.api.post(`${R}/${run.id}/cancel`)).body.data.status).toBe('cancelled');
    expect((await getRun(childId)).status).toBe('cancelled');

    // A child finishing later completes the parent's step.
    const run2 = await start(slowParent);
    const child2 = step(run2, 'nested').child_run_id;
    await server.api.post(`${R}/${child2}/steps/gate/approve`, { approved: true });
    const parentDone = await finished(run2.id);
    expect(step(parentDone, 'nested').output).toEqual({ gate: expect.objectContaining({ approved: true }) });
  });

  it('one batch acknowledgement moves every run it touches: branches of one run, several runs, parents of finishing children', async () => {
    const w = unique('batcher');
    const client = await server.agent(w);
    const child = await plan({ steps: [{ id: 'work', type: 'agent', agent: w, input: { part: 'child' } }] });
    const parent = await plan({
      steps: [
        { id: 'a', type: 'agent', agent: w, input: { part: 'a' } },
        { id: 'b', type: 'agent', agent: w, input: { part: 'b' } },
        { id: 'nested', type: 'sub_plan', plan_id: child },
        {
          id: 'join',
          type: 'transform',
          output: { a: '{{steps.a.output}}', nested: '{{steps.nested.output}}' },
          depends_on: ['a', 'b', 'nested'],
        },
      ],
    });
    const runs = await Promise.all([1, 2, 3].map(() => start(parent)));
    // Three runs × (a, b) and their three children's `work`: nine messages, settled in one call.
    const messages = await waitFor(async () => {
      const got = await client.get(`/api/v1/messaging/receive?agent_id=${w}&timeout=1&max=20&visibility_timeout=60`);
      return got.body.data.messages.length > 0 ? got.body.data.messages : null;
    });
    const pending = [...messages];
    while (pending.length < 9)
      pending.push(...(await client.get(`/api/v1/messaging/receive?agent_id=${w}&timeout=1&max=20`)).body.data.messages);
    expect(pending).toHaveLength(9);
    const ack = await client.post('/api/v1/messaging/acknowledge', { message_ids: pending.map((m: InboxMessage) => m.message_id) });
    expect(ack.status, ack.text).toBe(200);
    for (const run of runs) {
      const done = await finished(run.id);
      expect(step(done, 'join').output).toEqual({ a: {}, nested: { work: {} } });
      expect((await getRun(step(done, 'nested').child_run_id)).status).toBe('completed');
      const timeline = (await server.api.get(`${R}/${run.id}/events?limit=100`)).body.data.map(
        (e: { type: string; step_id: string | null }) => `${e.type}:${e.step_id}`,
      );
      for (const id of ['a', 'b', 'nested', 'join']) expect(timeline).toContain(`step.completed:${id}`);
    }
  });

  it('adaptive runs re-route a failed capability step to another healthy agent', async () => {
    const capability = unique('translate');
    const bad = unique('bad-translator');
    const good = unique('good-translator');
    const { client: badClient } = await agent(bad, () => ({ reject: 'model overloaded', requeue: false }));
    const { client: goodClient } = await agent(good, () => ({ output: { text: 'bonjour' } }));
    await badClient.post('/api/v1/discovery/capabilities', { agent_id: bad, capability });
    await badClient.post('/api/v1/discovery/heartbeat', { agent_id: bad, load: 0 });
    await goodClient.post('/api/v1/discovery/capabilities', { agent_id: good, capability });
    await goodClient.post('/api/v1/discovery/heartbeat', { agent_id: good, load: 0.5 });
    const id = await plan({ steps: [{ id: 'tr', type: 'agent', capability, strategy: 'least_loaded', input: { text: 'hello' } }] });

    const plain = await finished((await start(id)).id, 'failed');
    expect(step(plain, 'tr').agent).toBe(bad);

    const adaptive = await finished((await start(id, {}, { adaptive: { enabled: true, max_revisions: 2 } })).id);
    expect(step(adaptive, 'tr')).toMatchObject({ status: 'completed', agent: good, output: { text: 'bonjour' } });
    expect(adaptive.revisions).toEqual([
      expect.objectContaining({ step: 'tr', reason: 'model overloaded', change: { action: 'reroute', from_agent: bad, to_agent: good } }),
    ]);
  });

  it('redrive restarts a failed run from its failed steps without re-running completed ones', async () => {
    const once = unique('once');
    const moody = unique('moody');
    let fail = true;
    const { loop: onceLoop } = await agent(once, () => ({ output: { v: 1 } }));
    await agent(moody, () => (fail ? { reject: 'not today', requeue: false } : { output: { v: 2 } }));
    const id = await plan({
      steps: [
        { id: 'first', type: 'agent', agent: once },
        { id: 'second', type: 'agent', agent: moody, depends_on: ['first'] },
      ],
    });
    const run = await start(id);
    const failed = await finished(run.id, 'failed');
    expect((await server.api.post(`${R}/${run.id}/redrive`)).status).toBe(200);
    expect(failed.status).toBe('failed');
    await finished(run.id, 'failed');
    fail = false;
    const redriven = await server.api.post(`${R}/${run.id}/redrive`);
    expect(redriven.body.data.status).toBe('running');
    const done = await finished(run.id);
    expect(done.output).toEqual({ second: { v: 2 } });
    expect(onceLoop.handled).toHaveLength(1);
    expect((await server.api.post(`${R}/${run.id}/redrive`)).status).toBe(409);
  });

  it('wait steps resume after a delay and on a matching published event', async () => {
    const id = await plan({
      steps: [
        { id: 'pause', type: 'wait', seconds: 1 },
        { id: 'order', type: 'wait', event: { topic: 'orders.*', match: { order_id: '{{input.order}}' } }, depends_on: ['pause'] },
        { id: 'done', type: 'transform', output: { paid: '{{steps.order.output.payload.amount}}' }, depends_on: ['order'] },
      ],
    });
    const run = await start(id, { order: 'o-42' });
    expect(run.status).toBe('waiting');
    await waitFor(async () => step(await getRun(run.id), 'order').status === 'running', 5000);
    const publisher = await server.agent(unique('shop'));
    await publisher.post('/api/v1/messaging/publish', { topic: 'orders.paid', payload: { order_id: 'o-41', amount: 1 } });
    expect(step(await getRun(run.id), 'order').status).toBe('running');
    await publisher.post('/api/v1/messaging/publish', { topic: 'orders.paid', payload: { order_id: 'o-42', amount: 99 } });
    const done = await finished(run.id);
    expect(done.output).toEqual({ done: { paid: 99 } });
    expect(step(done, 'order').output).toMatchObject({ topic: 'orders.paid', payload: { order_id: 'o-42' } });
  });

  it('finds runs by the tags they were started with; refuses a bad tag or too many with nothing started', async () => {
    const id = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'tagged' }] });
    const customer = unique('customer');
    const startTagged = async (tags: string[]) => {
      const res = await server.api.post(R, { plan_id: id, tags });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    const first = await startTagged([`customer:${customer}`, 'env=prod', 'env=prod']);
    expect(first.tags).toEqual([`customer:${customer}`, 'env=prod']);
    const second = await startTagged([`customer:${customer}`]);
    await startTagged(['env=staging']);
    expect((await getRun(first.id)).tags).toEqual([`customer:${customer}`, 'env=prod']);

    const byCustomer = await server.api.get(`${R}?tag=${encodeURIComponent(`customer:${customer}`)}`);
    expect(byCustomer.body.data.map((r: { id: string }) => r.id)).toEqual([second.id, first.id]);
    expect(byCustomer.body.meta.total).toBe(2);
    expect(byCustomer.body.data[0].tags).toEqual([`customer:${customer}`]);
    const both = await server.api.get(`${R}?plan_id=${id}&tag=env%3Dprod&status=waiting`);
    expect(both.body.data.map((r: { id: string }) => r.id)).toEqual([first.id]);

    const before = (await server.api.get(`${R}?plan_id=${id}`)).body.meta.total;
    for (const tags of [['has space'], ['x'.repeat(65)], Array.from({ length: 21 }, (_, i) => `t${i}`), ['-leading']]) {
      const res = await server.api.post(R, { plan_id: id, tags });
      expect(res.status, JSON.stringify(tags)).toBe(400);
    }
    expect((await server.api.get(`${R}?tag=has%20space`)).status).toBe(400);
    expect((await server.api.get(`${R}?plan_id=${id}`)).body.meta.total).toBe(before);
  });

  it('finds runs by the metadata they were started with; refuses bad metadata with nothing started', async () => {
    const id = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'labelled' }] });
    const customer = unique('acme');
    const startWith = async (metadata: Record<string, unknown>) => {
      const res = await server.api.post(R, { plan_id: id, metadata });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    const first = await startWith({ customer, ticket: 'T-1=a' });
    expect(first.metadata).toEqual({ customer, ticket: 'T-1=a' });
    const second = await startWith({ customer });
    await startWith({ customer: `${customer}-other`, ticket: 'T-1=a' });
    expect((await getRun(first.id)).metadata).toEqual({ customer, ticket: 'T-1=a' });
    expect((await server.api.post(R, { plan_id: id })).body.data.metadata).toEqual({});

    const byCustomer = await server.api.get(`${R}?metadata=${encodeURIComponent(`customer=${customer}`)}`);
    expect(byCustomer.body.data.map((r: { id: string }) => r.id)).toEqual([second.id, first.id]);
    expect(byCustomer.body.meta.total).toBe(2);
    // A value may hold '=': the key ends at the first one.
    const byTicket = await server.api.get(`${R}?plan_id=${id}&metadata=${encodeURIComponent('ticket=T-1=a')}&status=waiting`);
    expect(byTicket.body.data.map((r: { id: string }) => r.id).sort()).toHaveLength(2);
    expect((await server.api.get(`${R}?metadata=${encodeURIComponent(`customer=${customer}x`)}`)).body.data).toEqual([]);

    const before = (await server.api.get(`${R}?plan_id=${id}`)).body.meta.total;
    const tooMany = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v']));
    for (const metadata of [
      { 'has space': 'v' },
      { k: 'x'.repeat(257) },
      { k: 7 },
      { k: { nested: 'v' } },
      tooMany,
      { '-leading': 'v' },
      ['k', 'v'],
    ]) {
      const res = await server.api.post(R, { plan_id: id, metadata });
      expect(res.status, JSON.stringify(metadata)).toBe(400);
    }
    for (const filter of ['customer', '=acme', 'has space=v'])
      expect((await server.api.get(`${R}?metadata=${encodeURIComponent(filter)}`)).status, filter).toBe(400);
    expect((await server.api.get(`${R}?plan_id=${id}`)).body.meta.total).toBe(before);
  });

  it('lists runs by plan and status, and a run pins the plan version it started with', async () => {
    const id = await plan({ steps: [{ id: 'gate', type: 'human_approval', prompt: 'v1' }] });
    const run = await start(id);
    const alias = (await server.api.get(`${P}/${id}`)).body.data.alias;
    await server.api.put(`${P}/${id}`, { alias, steps: [{ id: 'gate', type: 'human_approval', prompt: 'v2' }] });
    const newer = await start(id);
    expect(run.plan_version).toBe(1);
    expect(newer.plan_version).toBe(2);
    expect(step(await getRun(run.id), 'gate').input.prompt).toBe('v1');
    await server.api.post(`${R}/${run.id}/cancel`);
    const waiting = await server.api.get(`${R}?plan_id=${id}&status=waiting`);
    expect(waiting.body.data.map((r: { id: string }) => r.id)).toEqual([newer.id]);
    expect(waiting.body.meta.total).toBe(1);
    const all = await server.api.get(`${R}?plan_id=${alias}`);
    expect(all.body.data.map((r: { id: string }) => r.id)).toEqual([newer.id, run.id]);
    expect((await server.api.get(`${R}?status=bogus`)).status).toBe(400);
    expect((await server.api.post(R, { plan_id: 'nope' })).status).toBe(404);
    // By start time (the console's runs of the last 24 h): at or after started_after.
    const since = async (time: string) =>
      (await server.api.get(`${R}?plan_id=${id}&started_after=${encodeURIComponent(time)}`)).body.data.map((r: { id: string }) => r.id);
    expect(await since(run.started_at)).toEqual([newer.id, run.id]);
    expect(await since(new Date(Date.parse(newer.started_at) + 1).toISOString())).toEqual([]);
    expect((await server.api.get(`${R}?started_after=yesterday`)).status).toBe(400);
  });

  it('a transform failing on the run data fails the step, not the request', async () => {
    const id = await plan({ steps: [{ id: 'bad', type: 'transform', expression: '$number("abc") + $undefinedFunction()' }] });
    const run = await start(id);
    expect(run.status).toBe('failed');
    expect(step(run, 'bad').error).toMatch(/expression failed/);
  });

  it('rejects stale work: an agent of a cancelled run cannot complete it', async () => {
    const worker = unique('late');
    const client: Api = await server.agent(worker);
    const id = await plan({ steps: [{ id: 'w', type: 'agent', agent: worker }] });
    const run = await start(id);
    const message = await receiveOne(client, worker);
    await server.api.post(`${R}/${run.id}/cancel`);
    await reject(client, message.message_id, 'whatever', false).catch(() => undefined);
    expect((await getRun(run.id)).status).toBe('cancelled');
  });
});
