import { expect, it } from 'vitest';
import { acknowledge, receiveOne } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from './fixture.js';

type Step = {
  id: string;
  status: string;
  reused?: boolean;
  output: unknown;
  output_ref?: { artifact_id: string; size_bytes: number };
  child_run_id?: string;
};
const stepOf = (run: { steps: Step[] }, id: string) => run.steps.find((s) => s.id === id)!;

/** Over the 1 KiB inline limit below: it comes by reference. */
const big = (size: number) => ({ size, items: [{ name: 'first' }, { name: 'second' }], text: 'b'.repeat(4096) });

describeEachDialect('coordination: step outputs kept only by reference', (dialect) => {
  const { server, unique, plan, start, getRun, finished } = useCoordination(dialect, { env: { SWITCHBOARD_INLINE_PAYLOAD_BYTES: '1024' } });

  /** What the database holds of a step's output. */
  const storedOutput = async (runId: string, stepId: string) =>
    server.app.platform.database.db
      .selectFrom('run_steps')
      .select(['output', 'output_ref'])
      .where('run_id', '=', runId)
      .where('step_id', '=', stepId)
      .executeTakeFirstOrThrow();

  /**
   * work (agent, a large output) → gate (an approval: what follows runs in a later transition) →
   * check (a condition on it) → use (an agent whose input reads it) and each (a for_each over it);
   * the run's output reads it too.
   */
  async function refPlan() {
    const worker = unique('ref-worker');
    const user = unique('ref-user');
    const id = await plan({
      steps: [
        { id: 'work', type: 'agent', agent: worker, input: {} },
        { id: 'gate', type: 'human_approval', prompt: 'go on?', depends_on: ['work'] },
        { id: 'check', type: 'condition', expression: 'steps.work.output.size > 100', then: 'use', else: 'other', depends_on: ['gate'] },
        {
          id: 'use',
          type: 'agent',
          agent: user,
          input: { size: '{{steps.work.output.size}}', first: '{{steps.work.output.items[0].name}}' },
        },
        { id: 'other', type: 'transform', output: { small: true } },
        {
          id: 'each',
          type: 'parallel',
          depends_on: ['gate'],
          for_each: '{{steps.work.output.items}}',
          step: { type: 'transform', output: { name: '{{item.name}}', size: '{{steps.work.output.size}}' } },
        },
      ],
      output: { size: '{{steps.work.output.size}}', used: '{{steps.use.output}}', names: '{{steps.each.output}}' },
    });
    return { id, worker, user, workerApi: await server.agent(worker), userApi: await server.agent(user) };
  }

  it('later steps, a condition, a for_each and the run output read the value from the artifact; the row keeps only the reference', async () => {
    const { id, worker, user, workerApi, userApi } = await refPlan();
    const run = await start(id);
    const output = big(5000);
    await acknowledge(workerApi, (await receiveOne(workerApi, worker)).message_id, output);

    const waiting = await finished(run.id, 'waiting');
    expect(stepOf(waiting, 'work').output).toBeNull();
    expect(stepOf(waiting, 'work').output_ref!.size_bytes).toBe(JSON.stringify(output).length);
    expect(await storedOutput(run.id, 'work')).toEqual({ output: null, output_ref: expect.stringContaining('"artifact_id"') });

    const approved = await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true });
    expect(approved.status, approved.text).toBe(200);
    const message = await receiveOne(userApi, user);
    expect(message.payload.input).toEqual({ size: 5000, first: 'first' });
    await acknowledge(userApi, message.message_id, { ok: true });

    const done = await finished(run.id);
    expect(stepOf(done, 'check').output).toEqual({ result: true, branch: 'then' });
    expect(stepOf(done, 'other').status).toBe('skipped');
    const names = [
      { name: 'first', size: 5000 },
      { name: 'second', size: 5000 },
    ];
    expect(stepOf(done, 'each').output).toEqual(names);
    expect(done.output).toEqual({ size: 5000, used: { ok: true }, names });
    expect(stepOf(done, 'work').output).toBeNull();
    expect((await storedOutput(run.id, 'work')).output).toBeNull();
    // The event log keeps the reference too, not a copy.
    const events = (await server.api.get('/api/v1/events?limit=500')).body.data as { type: string; data: Record<string, unknown> }[];
    const completed = events.find((e) => e.type === 'run.step.completed' && e.data.run_id === run.id && e.data.step_id === 'work');
    expect(completed?.data).toMatchObject({ output: null, output_ref: { artifact_id: stepOf(done, 'work').output_ref!.artifact_id } });
  });

  it("a run's large output is kept by reference; a sub_plan step takes its child run's by the same reference, and a later step reads it", async () => {
    const a = unique('ref-child');
    const agent = await server.agent(a);
    const child = await plan({ steps: [{ id: 'work', type: 'agent', agent: a, input: {} }] });
    const id = await plan({
      steps: [
        { id: 'sub', type: 'sub_plan', plan_id: child },
        { id: 'gate', type: 'human_approval', prompt: 'go on?', depends_on: ['sub'] },
        { id: 'read', type: 'transform', output: { size: '{{steps.sub.output.work.size}}' }, depends_on: ['gate'] },
      ],
    });
    const run = await start(id);
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, big(3));
    const waiting = await finished(run.id, 'waiting');
    const childRun = await getRun(stepOf(waiting, 'sub').child_run_id!);
    expect(childRun).toMatchObject({
      status: 'completed',
      output: null,
      output_ref: { size_bytes: JSON.stringify({ work: big(3) }).length },
    });
    expect(await (await fetch(childRun.output_ref.url)).json()).toEqual({ work: big(3) });
    const stored = await server.app.platform.database.db
      .selectFrom('runs')
      .select(['output', 'output_ref'])
      .where('id', '=', childRun.id)
      .executeTakeFirstOrThrow();
    expect(stored.output).toBeNull();
    expect(stepOf(waiting, 'sub').output_ref!.artifact_id).toBe(childRun.output_ref.artifact_id);
    expect((await storedOutput(run.id, 'sub')).output).toBeNull();
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    expect(stepOf(await finished(run.id), 'read').output).toEqual({ size: 3 });
  });

  it('an expression that reaches step outputs other than by name ($lookup) still reads them', async () => {
    const a = unique('ref-lookup');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'work', type: 'agent', agent: a, input: {} },
        { id: 'gate', type: 'human_approval', prompt: 'go on?', depends_on: ['work'] },
        { id: 'pick', type: 'transform', expression: '$lookup(steps, "work").output.items[1].name', depends_on: ['gate'] },
      ],
    });
    const run = await start(id);
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, big(1));
    await finished(run.id, 'waiting');
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    expect(stepOf(await finished(run.id), 'pick').output).toBe('second');
  });

  it('a step that needs an output whose artifact its agent deleted fails, naming it', async () => {
    const { id, worker, workerApi } = await refPlan();
    const run = await start(id);
    await acknowledge(workerApi, (await receiveOne(workerApi, worker)).message_id, big(500));
    const waiting = await finished(run.id, 'waiting');
    const artifactId = stepOf(waiting, 'work').output_ref!.artifact_id;
    expect((await workerApi.delete(`/api/v1/artifacts/${artifactId}`)).status).toBe(200);
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    const failed = await finished(run.id, 'failed');
    expect(failed.error).toContain(`the output of step 'work' is gone`);
  });

  it('a run whose output reads an output whose artifact its agent deleted fails, naming it', async () => {
    const worker = unique('ref-gone-worker');
    const id = await plan({
      steps: [
        { id: 'work', type: 'agent', agent: worker, input: {} },
        { id: 'gate', type: 'human_approval', prompt: 'go on?', depends_on: ['work'] },
      ],
      output: { size: '{{steps.work.output.size}}' },
    });
    const workerApi = await server.agent(worker);
    const run = await start(id);
    await acknowledge(workerApi, (await receiveOne(workerApi, worker)).message_id, big(500));
    const waiting = await finished(run.id, 'waiting');
    expect((await workerApi.delete(`/api/v1/artifacts/${stepOf(waiting, 'work').output_ref!.artifact_id}`)).status).toBe(200);
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    const failed = await finished(run.id, 'failed');
    expect(failed.error).toContain(`the output of step 'work' is gone`);
  });

  it('a rerun that reuses the step reads its output from the same artifact', async () => {
    const { id, worker, user, workerApi, userApi } = await refPlan();
    const run = await start(id);
    await acknowledge(workerApi, (await receiveOne(workerApi, worker)).message_id, big(7000));
    await finished(run.id, 'waiting');
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    await acknowledge(userApi, (await receiveOne(userApi, user)).message_id, { ok: 1 });
    const earlier = await finished(run.id);

    const rerun = await server.api.post(`${R}/${run.id}/rerun`, { from_step: 'check' });
    expect(rerun.status, rerun.text).toBe(201);
    const laterId = rerun.body.data.id as string;
    const message = await receiveOne(userApi, user);
    expect(message.payload.run_id).toBe(laterId);
    expect(message.payload.input).toEqual({ size: 7000, first: 'first' });
    await acknowledge(userApi, message.message_id, { ok: 2 });

    const later = await finished(laterId);
    const work = stepOf(later, 'work');
    expect(work.reused).toBe(true);
    expect(work.output).toBeNull();
    expect(work.output_ref!.artifact_id).toBe(stepOf(earlier, 'work').output_ref!.artifact_id);
    expect(later.output).toMatchObject({ size: 7000, used: { ok: 2 } });
    expect(await storedOutput(laterId, 'work')).toEqual({ output: null, output_ref: expect.stringContaining('"artifact_id"') });
  });

  it("a for_each group's output gathers its items' outputs kept by reference, and is kept by reference itself; so is a transform's", async () => {
    const a = unique('ref-item');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        {
          id: 'each',
          type: 'parallel',
          for_each: '{{input.sizes}}',
          max_concurrency: 1,
          step: { type: 'agent', agent: a, input: { n: '{{item}}' } },
        },
        { id: 'copy', type: 'transform', output: { all: '{{steps.each.output}}' }, depends_on: ['each'] },
        { id: 'gate', type: 'human_approval', prompt: 'go on?', depends_on: ['copy'] },
        { id: 'last', type: 'transform', expression: 'steps.copy.output.all[1].size', depends_on: ['gate'] },
      ],
    });
    const run = await start(id, { sizes: [1, 2] });
    // One at a time: the first item's output is read back from its artifact when the second completes the group.
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, big(1));
    await acknowledge(agent, (await receiveOne(agent, a)).message_id, big(2));
    await finished(run.id, 'waiting');
    expect((await server.api.post(`${R}/${run.id}/steps/gate/approve`, { approved: true })).status).toBe(200);
    const done = await finished(run.id);
    expect(stepOf(done, 'last').output).toBe(2);
    for (const stepId of ['each[0]', 'each[1]', 'each', 'copy']) expect((await storedOutput(run.id, stepId)).output).toBeNull();
    const each = stepOf(done, 'each') as Step & { output_ref: { url: string } };
    expect(each.output).toBeNull();
    expect(await (await fetch(each.output_ref.url)).json()).toEqual([big(1), big(2)]);
    expect(await getRun(run.id)).toMatchObject({ output: { last: 2 } });
  });
});
