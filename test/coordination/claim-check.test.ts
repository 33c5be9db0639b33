import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const P = '/api/v1/coordination/plans';
const R = '/api/v1/coordination/runs';
const DAY = 86_400_000;

describeEachDialect('coordination: large step outputs by reference', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock });

  it('an acknowledgement over the inline limit becomes the step output_ref; templates still read the value; retention deletes it with the run', async () => {
    const agent = await server.agent('cc-worker');
    const plan = await server.api.post(P, {
      alias: 'cc-plan',
      steps: [
        { id: 'work', type: 'agent', agent: 'cc-worker', input: { n: 1 } },
        { id: 'next', type: 'transform', expression: '{"size": steps.work.output.size}', depends_on: ['work'] },
      ],
    });
    expect(plan.status, plan.text).toBe(201);
    const started = await server.api.post(R, { plan_id: plan.body.data.id, input: {} });
    expect(started.status, started.text).toBe(201);
    const runId = started.body.data.id as string;

    const [message] = await receive(agent, 'cc-worker', 0, 1);
    expect(message).toBeDefined();
    const output = { size: 300 * 1024, text: 'o'.repeat(300 * 1024) };
    await acknowledge(agent, message!.message_id, output);

    const run = (await server.api.get(`${R}/${runId}`)).body.data;
    expect(run.status).toBe('completed');
    const work = run.steps.find((s: { id: string }) => s.id === 'work');
    expect(work.output).toBeNull();
    const text = JSON.stringify(output);
    expect(work.output_ref).toMatchObject({ size_bytes: text.length, sha256: createHash('sha256').update(text).digest('hex') });
    const fetched = await fetch(work.output_ref.url);
    expect(fetched.status).toBe(200);
    expect(await fetched.text()).toBe(text);
    expect(run.steps.find((s: { id: string }) => s.id === 'next').output).toEqual({ size: 300 * 1024 });
    // The run list carries it too.
    const listed = (await server.api.get(`${R}?plan_id=${plan.body.data.id}`)).body.data[0];
    expect(listed.steps.find((s: { id: string }) => s.id === 'work').output_ref.artifact_id).toBe(work.output_ref.artifact_id);

    // The message goes after 7 days, the run after 30: the artifact stays until the run goes.
    const artifact = `/api/v1/artifacts/${work.output_ref.artifact_id}`;
    clock.advance(10 * DAY);
    while ((await server.app.retention.pass())?.more) {
      // a full batch: another pass
    }
    expect((await server.api.get(artifact)).status).toBe(200);
    clock.advance(30 * DAY);
    while ((await server.app.retention.pass())?.more) {
      // a full batch: another pass
    }
    expect((await server.api.get(`${R}/${runId}`)).status).toBe(404);
    expect((await server.api.get(artifact)).status).toBe(404);
  });

  it('a step input over the inline limit reaches the agent as input_ref and shows so in the run', async () => {
    const agent = await server.agent('cc-reader');
    const plan = await server.api.post(P, {
      alias: 'cc-input-plan',
      steps: [{ id: 'read', type: 'agent', agent: 'cc-reader', input: { doc: '{{input.doc}}', small: 1 } }],
    });
    expect(plan.status, plan.text).toBe(201);
    const doc = 'i'.repeat(300 * 1024);
    const started = await server.api.post(R, { plan_id: plan.body.data.id, input: { doc } });
    expect(started.status, started.text).toBe(201);
    const runId = started.body.data.id as string;

    const [message] = await receive(agent, 'cc-reader', 0, 1);
    const payload = message!.payload as { run_id: string; input: unknown; input_ref: { url: string; sha256: string; size_bytes: number } };
    expect(payload.run_id).toBe(runId);
    expect(payload.input).toBeNull();
    const text = JSON.stringify({ doc, small: 1 });
    expect(payload.input_ref).toMatchObject({ size_bytes: text.length, sha256: createHash('sha256').update(text).digest('hex') });
    const fetched = await fetch(payload.input_ref.url);
    expect(await fetched.text()).toBe(text);

    const step = (await server.api.get(`${R}/${runId}`)).body.data.steps[0];
    expect(step.input).toBeNull();
    expect(step.input_ref.sha256).toBe(payload.input_ref.sha256);
    await acknowledge(agent, message!.message_id, { ok: true });
    const done = (await server.api.get(`${R}/${runId}`)).body.data;
    expect(done.status).toBe('completed');
    expect(done.steps[0].output).toEqual({ ok: true });
    expect(done.steps[0].output_ref).toBeUndefined();
  });

  it("a rerun that reuses a step keeps its output's artifact after the earlier run is gone", async () => {
    const agent = await server.agent('cc-rerun');
    const plan = await server.api.post(P, {
      alias: 'cc-rerun-plan',
      steps: [
        { id: 'work', type: 'agent', agent: 'cc-rerun', input: {} },
        { id: 'next', type: 'transform', expression: '{"size": steps.work.output.size}', depends_on: ['work'] },
      ],
    });
    const started = await server.api.post(R, { plan_id: plan.body.data.id, input: {} });
    const [message] = await receive(agent, 'cc-rerun', 0, 1);
    const output = { size: 7, text: 'r'.repeat(300 * 1024) };
    await acknowledge(agent, message!.message_id, output);
    const earlier = (await server.api.get(`${R}/${started.body.data.id}`)).body.data;
    expect(earlier.status).toBe('completed');

    clock.advance(31 * DAY);
    const rerun = await server.api.post(`${R}/${earlier.id}/rerun`, { from_step: 'next' });
    expect(rerun.status, rerun.text).toBe(201);
    const later = await waitForRun(rerun.body.data.id as string);
    const work = later.steps.find((s: { id: string }) => s.id === 'work');
    expect(work.reused).toBe(true);
    expect(later.steps.find((s: { id: string }) => s.id === 'next').output).toEqual({ size: 7 });
    while ((await server.app.retention.pass())?.more) {
      // a full batch: another pass
    }
    expect((await server.api.get(`${R}/${earlier.id}`)).status).toBe(404);
    const fetched = await fetch((await waitForRun(later.id)).steps.find((s: { id: string }) => s.id === 'work').output_ref.url);
    expect(fetched.status).toBe(200);
    expect(JSON.parse(await fetched.text())).toEqual(output);
  });

  const waitForRun = (id: string) =>
    waitFor(async () => {
      const run = (await server.api.get(`${R}/${id}`)).body.data;
      return run.status === 'completed' ? run : undefined;
    }, 10_000);
});
