import { expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from './fixture.js';

describeEachDialect('redriving a plan step dead letter', (dialect) => {
  const { server, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const redrive = (messageId: string) => server.api.post(`/api/v1/messaging/dead-letters/${messageId}/redrive`, {});

  it('continues the run it failed: the step awaits the redriven message, whose acknowledgement moves the run on', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({
      steps: [
        { id: 'fetch', type: 'agent', agent: a },
        { id: 'write', type: 'agent', agent: a, depends_on: ['fetch'], input: { got: '{{steps.fetch.output.n}}' } },
      ],
    });
    const run = await start(id);
    const letter = await receiveOne(agent, a);
    await reject(agent, letter.message_id, 'bad prompt', false);
    const failed = await finished(run.id, 'failed');
    expect(failed.steps[0]).toMatchObject({ status: 'failed', error: 'bad prompt' });

    const copy = await redrive(letter.message_id);
    expect(copy.status, copy.text).toBe(201);
    const resumed = await getRun(run.id);
    expect(resumed.status).toBe('running');
    expect(resumed.steps[0]).toMatchObject({ status: 'running', attempt: 1, error: null });

    const again = await receiveOne(agent, a);
    expect(again.message_id).toBe(copy.body.data.message_id);
    await acknowledge(agent, again.message_id, { n: 7 });
    const next = await receiveOne(agent, a);
    expect(next.payload).toMatchObject({ step_id: 'write', input: { got: 7 } });
    await acknowledge(agent, next.message_id, { ok: true });
    const done = await finished(run.id);
    expect(done.output).toEqual({ write: { ok: true } });
    const timeline = (await server.api.get(`${R}/${run.id}/events`)).body.data as { type: string }[];
    expect(timeline.map((e) => e.type)).toContain('run.redriven');
  });

  it('is refused with 409 naming the run once the run was cancelled; a letter the step moved past only redrives the message', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({ steps: [{ id: 'work', type: 'agent', agent: a, retry: { max_attempts: 3, backoff_seconds: 60 } }] });
    const run = await start(id);
    const first = await receiveOne(agent, a);
    await reject(agent, first.message_id, 'flaky', false);
    // The step waits for its next attempt: the letter of the first one is redriven as a message only.
    const copy = await redrive(first.message_id);
    expect(copy.status, copy.text).toBe(201);
    expect((await getRun(run.id)).steps[0]).toMatchObject({ status: 'pending', attempt: 1 });
    const copied = await receiveOne(agent, a);
    await reject(agent, copied.message_id, 'still flaky', false);

    expect((await server.api.post(`${R}/${run.id}/cancel`, {})).status).toBe(200);
    const refused = await redrive(copied.message_id);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.message).toContain(run.id);
    expect((await getRun(run.id)).status).toBe('cancelled');
  });
});
