import { expect, it } from 'vitest';
import { acknowledge, receive, receiveOne, reject } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { P, R, useCoordination } from './fixture.js';

type Step = { id: string; status: string; reused: boolean; output: unknown; input: unknown };
const stepOf = (run: { steps: Step[] }, id: string) => run.steps.find((s) => s.id === id)!;

describeEachDialect('rerunning a run from a step', (dialect) => {
  const { server, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const rerun = (runId: string, body: Record<string, unknown>) => server.api.post(`${R}/${runId}/rerun`, body);

  /** fetch → shape → write, one agent; the run fails at `write`. */
  async function failedThreeStepRun() {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'fetch', type: 'agent', agent: a, input: { q: '{{input.q}}' } },
        { id: 'shape', type: 'agent', agent: a, depends_on: ['fetch'], input: { n: '{{steps.fetch.output.n}}' } },
        { id: 'write', type: 'agent', agent: a, depends_on: ['shape'], input: { prompt: 'bad', m: '{{steps.shape.output.m}}' } },
      ],
    });
    const run = await start(id, { q: 'x' });
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, { n: 1 });
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, { m: 2 });
    await reject(agent, (await receiveOne(agent, a)).message_id, 'bad prompt', false);
    await finished(run.id, 'failed');
    return { a, agent, planId: id, run };
  }

  it('reuses the steps before from_step (not redelivered) and runs from_step onward with the edited input', async () => {
    const { a, agent, run } = await failedThreeStepRun();
    const res = await rerun(run.id, { from_step: 'shape', step_inputs: { write: { prompt: 'good', m: 5 } } });
    expect(res.status, res.text).toBe(201);
    const again = res.body.data;
    expect(again).toMatchObject({ rerun_of: run.id, status: 'running' });
    expect(again.id).not.toBe(run.id);
    expect(stepOf(again, 'fetch')).toMatchObject({ status: 'completed', reused: true, output: { n: 1 } });
    expect(stepOf(again, 'shape').reused).toBe(false);

    // The agent gets shape (with fetch's kept output), then write with the edited input; never fetch.
    const shape = await receiveOne(agent, a);
    expect(shape.payload).toMatchObject({ run_id: again.id, step_id: 'shape', input: { n: 1 } });
    await acknowledge(agent, shape.message_id, { m: 3 });
    const write = await receiveOne(agent, a);
    expect(write.payload).toMatchObject({ step_id: 'write', input: { prompt: 'good', m: 5 } });
    await acknowledge(agent, write.message_id, { ok: true });
    const done = await finished(again.id);
    expect(done.output).toEqual({ write: { ok: true } });
    expect(await receive(agent, a, 0)).toEqual([]);
    // The earlier run is left as it was; its step letters no longer redrive it.
    expect((await getRun(run.id)).status).toBe('failed');
  });

  it('takes a new run input, and follows the latest plan version with plan_version latest', async () => {
    const { a, agent, planId, run } = await failedThreeStepRun();
    const definition = (await server.api.get(`${P}/${planId}`)).body.data;
    const steps = definition.steps.map((s: { id: string }) => (s.id === 'write' ? { ...s, input: { prompt: 'v2' } } : s));
    expect((await server.api.put(`${P}/${planId}`, { alias: definition.alias, steps })).status).toBeLessThan(300);

    const res = await rerun(run.id, { from_step: 'fetch', input: { q: 'y' }, plan_version: 'latest' });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.plan_version).toBe(definition.version + 1);
    expect(res.body.data.input).toEqual({ q: 'y' });
    const fetch = await receiveOne(agent, a);
    expect(fetch.payload).toMatchObject({ step_id: 'fetch', input: { q: 'y' } });
    await acknowledge(agent, fetch.message_id, { n: 9 });
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, { m: 1 });
    const write = await receiveOne(agent, a);
    expect(write.payload).toMatchObject({ step_id: 'write', input: { prompt: 'v2' } });
  });

  it('reruns a condition branch, keeping the condition and the branch not taken', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'check', type: 'condition', expression: 'input.big', then: ['large'], else: ['small'] },
        { id: 'large', type: 'agent', agent: a },
        { id: 'small', type: 'agent', agent: a },
      ],
    });
    const run = await start(id, { big: true });
    await reject(agent, (await receiveOne(agent, a)).message_id, 'nope', false);
    await finished(run.id, 'failed');
    const res = await rerun(run.id, { from_step: 'large' });
    expect(res.status, res.text).toBe(201);
    expect(stepOf(res.body.data, 'check')).toMatchObject({ status: 'completed', reused: true });
    expect(stepOf(res.body.data, 'small')).toMatchObject({ status: 'skipped', reused: true });
    const large = await receiveOne(agent, a);
    expect(large.payload).toMatchObject({ run_id: res.body.data.id, step_id: 'large' });
    await acknowledge(agent, large.message_id, { done: 1 });
    await finished(res.body.data.id);
  });

  it('reruns one parallel branch, keeping the other; and one for_each item, keeping the other items', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'both', type: 'parallel', steps: ['left', 'right'] },
        { id: 'left', type: 'agent', agent: a, input: { side: 'L' } },
        { id: 'right', type: 'transform', output: { side: 'R' } },
        { id: 'map', type: 'parallel', for_each: '{{input.numbers}}', step: { type: 'agent', agent: a, input: { n: '{{item}}' } } },
        {
          id: 'after',
          type: 'transform',
          output: { left: '{{steps.both.output.left.v}}', map: '{{steps.map.output}}' },
          depends_on: ['both', 'map'],
        },
      ],
    });
    const run = await start(id, { numbers: [1, 2] });
    const answer = async (fail?: string) => {
      for (let left = 3; left > 0; left--) {
        const m = await receiveOne(agent, a);
        const input = m.payload.input as { side?: string; n?: number };
        if (fail !== undefined && m.payload.step_id === fail) await reject(agent, m.message_id, 'bad', false);
        else await acknowledge(agent, m.message_id, { v: input.side ?? input.n });
        if (fail !== undefined && m.payload.step_id === fail) return;
      }
    };
    await answer('map[1]');
    await finished(run.id, 'failed');

    const item = await rerun(run.id, { from_step: 'map[1]', step_inputs: { 'map[1]': { n: 20 } } });
    expect(item.status, item.text).toBe(201);
    const second = item.body.data;
    expect(stepOf(second, 'map[0]')).toMatchObject({ status: 'completed', reused: true, output: { v: 1 } });
    expect(stepOf(second, 'map').reused).toBe(false);
    const only = await receiveOne(agent, a);
    expect(only.payload).toMatchObject({ run_id: second.id, step_id: 'map[1]', input: { n: 20 } });
    await acknowledge(agent, only.message_id, { v: 20 });
    const done = await finished(second.id);
    expect(stepOf(done, 'after').output).toEqual({ left: 'L', map: [{ v: 1 }, { v: 20 }] });

    const branch = await rerun(done.id, { from_step: 'left', step_inputs: { left: { side: 'L2' } } });
    expect(branch.status, branch.text).toBe(201);
    expect(stepOf(branch.body.data, 'right')).toMatchObject({ status: 'completed', reused: true });
    expect(stepOf(branch.body.data, 'map')).toMatchObject({ status: 'completed', reused: true });
    const left = await receiveOne(agent, a);
    expect(left.payload).toMatchObject({ step_id: 'left', input: { side: 'L2' } });
    await acknowledge(agent, left.message_id, { v: 'L2' });
    const third = await finished(branch.body.data.id);
    expect(stepOf(third, 'after').output).toEqual({ left: 'L2', map: [{ v: 1 }, { v: 20 }] });
    expect(stepOf(third, 'map[1]')).toMatchObject({ status: 'completed', reused: true });
    expect(await receive(agent, a, 0)).toEqual([]);
  });

  it('reruns a sub_plan step as a new child run; a sub_plan run itself is rerun through its parent (409)', async () => {
    const child = await plan({ steps: [{ id: 'shout', type: 'transform', expression: '$uppercase(input.word)' }] });
    const parent = await plan({
      steps: [
        { id: 'pick', type: 'transform', output: '{{input.word}}' },
        { id: 'nested', type: 'sub_plan', plan_id: child, input: { word: '{{steps.pick.output}}' }, depends_on: ['pick'] },
      ],
    });
    const done = await finished((await start(parent, { word: 'hey' })).id);
    const childRunId = stepOf(done, 'nested') as unknown as { child_run_id: string };
    const res = await rerun(done.id, { from_step: 'nested' });
    expect(res.status, res.text).toBe(201);
    const again = await finished(res.body.data.id);
    expect(stepOf(again, 'pick')).toMatchObject({ reused: true, output: 'hey' });
    const nested = stepOf(again, 'nested') as unknown as { child_run_id: string; output: unknown };
    expect(nested.output).toEqual({ shout: 'HEY' });
    expect(nested.child_run_id).not.toBe(childRunId.child_run_id);
    expect((await rerun(childRunId.child_run_id, { from_step: 'shout' })).status).toBe(409);
  });

  it('answers 404, 409, 400 and 403 as it should, and a rerun run refuses the redrive of its letters', async () => {
    expect((await rerun('run_nope', { from_step: 'x' })).status).toBe(404);
    const { a, agent, run } = await failedThreeStepRun();
    expect((await rerun(run.id, { from_step: 'nope' })).status).toBe(400);
    expect((await rerun(run.id, { from_step: 'shape', step_inputs: { fetch: {} } })).status).toBe(400);
    expect((await rerun(run.id, {})).status).toBe(400);
    const stranger = await server.agent(unique('stranger'));
    expect((await stranger.post(`${R}/${run.id}/rerun`, { from_step: 'shape' })).status).toBe(403);

    const letters = (await server.api.get(`/api/v1/messaging/dead-letters?agent_id=${a}`)).body.data as { message_id: string }[];
    const res = await rerun(run.id, { from_step: 'write' });
    expect(res.status, res.text).toBe(201);
    // Still running: a run in progress is not rerun.
    expect((await rerun(res.body.data.id, { from_step: 'write' })).status).toBe(409);
    const refused = await server.api.post(`/api/v1/messaging/dead-letters/${letters[0]!.message_id}/redrive`, {});
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.message).toContain(run.id);
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, {});
  });

  it('replays the runs a filter matches, from their start or their failed step, with a dry run first', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'one', type: 'transform', output: '{{input.n}}' },
        { id: 'two', type: 'agent', agent: a, depends_on: ['one'], input: { n: '{{steps.one.output}}' } },
      ],
    });
    const failedRuns: string[] = [];
    for (const n of [1, 2]) {
      const run = await start(id, { n });
      await reject(agent, (await receiveOne(agent, a)).message_id, n === 1 ? 'quota exceeded' : 'bad prompt', false);
      await finished(run.id, 'failed');
      failedRuns.push(run.id);
    }
    const replay = (body: Record<string, unknown>) => server.api.post(`${R}/replay`, body);
    const dry = await replay({ filter: { plan_id: id, status: 'failed', error: 'quota' }, replay_from: 'failed_step', dry_run: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data).toEqual({ count: 1, run_ids: [failedRuns[0]], matched: 1, truncated: false });
    expect(await receive(agent, a, 0)).toEqual([]);

    const real = await replay({ filter: { plan_id: id, status: 'failed' }, replay_from: 'failed_step' });
    expect(real.body.data.count).toBe(2);
    const replays = await Promise.all((real.body.data.run_ids as string[]).map(getRun));
    expect(replays.map((r) => r.rerun_of).sort()).toEqual([...failedRuns].sort());
    for (const r of replays) expect(stepOf(r, 'one')).toMatchObject({ reused: true });
    for (const m of await receive(agent, a, 5, 10)) await acknowledge(agent, m.message_id, { ok: true });

    const fromStart = await replay({ filter: { plan_id: id, status: 'completed' }, replay_from: 'start' });
    expect(fromStart.body.data.count).toBe(2);
    for (const r of await Promise.all((fromStart.body.data.run_ids as string[]).map(getRun))) expect(stepOf(r, 'one').reused).toBe(false);
    expect((await replay({ filter: {}, replay_from: 'middle' })).status).toBe(400);
    // An agent replays only runs it started.
    const stranger = await server.agent(unique('stranger'));
    const theirs = await stranger.post(`${R}/replay`, { filter: { plan_id: id }, replay_from: 'start', dry_run: true });
    expect(theirs.body.data).toEqual({ count: 0, run_ids: [], matched: 0, truncated: false });
    const audit = await server.api.get('/api/v1/audit?action=run.replay');
    expect(audit.status, audit.text).toBe(200);
    // One entry per replay call (two calls replayed), not one per run.
    expect((audit.body.data as unknown[]).filter((e) => JSON.stringify(e).includes(id))).toHaveLength(2);
  });
});

describeEachDialect('replaying more runs than one call takes', (dialect) => {
  // The bound lowered from 10,000 so that a handful of runs crosses it.
  const { server, plan, start, finished } = useCoordination(dialect, { env: { SWITCHBOARD_REPLAY_MAX_RUNS: '2' } });
  const replay = (body: Record<string, unknown>) => server.api.post(`${R}/replay`, body);

  async function finishedRuns(count: number) {
    const id = await plan({ steps: [{ id: 'one', type: 'transform', output: '{{input.n}}' }] });
    const runs: string[] = [];
    for (let n = 0; n < count; n++) runs.push((await finished((await start(id, { n })).id)).id);
    return { id, runs };
  }

  it('takes up to the bound and says the answer is truncated when more matched', async () => {
    const { id, runs } = await finishedRuns(3);
    const dry = await replay({ filter: { plan_id: id }, replay_from: 'start', dry_run: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data).toMatchObject({ count: 2, matched: 3, truncated: true });
    for (const run of dry.body.data.run_ids) expect(runs).toContain(run);

    const real = await replay({ filter: { plan_id: id }, replay_from: 'start' });
    expect(real.status, real.text).toBe(200);
    expect(real.body.data).toMatchObject({ count: 2, matched: 3, truncated: true });
    expect(real.body.data.run_ids).toHaveLength(2);
  });

  it('is not truncated when exactly the bound matched', async () => {
    const { id, runs } = await finishedRuns(2);
    const dry = await replay({ filter: { plan_id: id }, replay_from: 'start', dry_run: true });
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data).toMatchObject({ count: 2, matched: 2, truncated: false });
    expect([...dry.body.data.run_ids].sort()).toEqual([...runs].sort());
  });
});
