import { expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from './fixture.js';

describeEachDialect('step checkpoints', (dialect) => {
  const { server, unique, plan, start, getRun, finished } = useCoordination(dialect);
  const checkpoint = (runId: string, stepId: string) => `${R}/${runId}/steps/${stepId}/checkpoint`;

  it('the executing agent saves progress; a redelivery and the next attempt carry the latest; the run shows it', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const id = await plan({ steps: [{ id: 'work', type: 'agent', agent: a, input: { n: 3 }, retry: { max_attempts: 2 } }] });
    const run = await start(id);

    const first = await receiveOne(agent, a);
    expect(first.payload.checkpoint).toBeUndefined();
    const saved = await agent.post(checkpoint(run.id, 'work'), { state: { done: 1 } });
    expect(saved.status, saved.text).toBe(200);
    expect(saved.body.data).toMatchObject({ state: { done: 1 }, attempt: 1 });
    expect(Date.parse(saved.body.data.saved_at)).not.toBeNaN();
    expect((await agent.post(checkpoint(run.id, 'work'), { state: { done: 2 } })).status).toBe(200);
    expect((await getRun(run.id)).steps[0].checkpoint).toMatchObject({ state: { done: 2 }, attempt: 1 });

    // The same message again (the agent gave it back, or died holding it): it carries the latest.
    await reject(agent, first.message_id, 'restarting', true);
    const again = await receiveOne(agent, a);
    expect(again.message_id).toBe(first.message_id);
    expect(again.payload.checkpoint).toMatchObject({ state: { done: 2 }, attempt: 1 });

    // A new attempt's message carries it too.
    await reject(agent, again.message_id, 'crashed', false);
    const retried = await receiveOne(agent, a);
    expect(retried.message_id).not.toBe(first.message_id);
    expect(retried.payload.checkpoint).toMatchObject({ state: { done: 2 }, attempt: 1 });
    expect((await agent.post(checkpoint(run.id, 'work'), { state: { done: 3 } })).body.data.attempt).toBe(2);
    await acknowledge(agent, retried.message_id, { total: 3 });
    const done = await finished(run.id);
    expect(done.steps[0].checkpoint).toMatchObject({ state: { done: 3 }, attempt: 2 });

    // Once the step finished, nothing more is saved to it.
    const late = await agent.post(checkpoint(run.id, 'work'), { state: { done: 4 } });
    expect(late.status).toBe(409);
  });

  it('only the agent executing the step may save; bounded; 404 for an unknown step', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const other = await server.agent(unique('other'));
    const id = await plan({ steps: [{ id: 'work', type: 'agent', agent: a }] });
    const run = await start(id);
    await receiveOne(agent, a);

    const refused = await other.post(checkpoint(run.id, 'work'), { state: { x: 1 } });
    expect(refused.status, refused.text).toBe(403);
    const byAdmin = await server.api.post(checkpoint(run.id, 'work'), { state: { x: 1 } });
    expect(byAdmin.status).toBe(403);
    expect((await agent.post(checkpoint(run.id, 'nope'), { state: {} })).status).toBe(404);
    expect((await agent.post(checkpoint(run.id, 'work'), {})).status).toBe(400);
    const big = await agent.post(checkpoint(run.id, 'work'), { state: 'x'.repeat(1024 * 1024 + 10) });
    expect(big.status).toBe(413);
    expect((await getRun(run.id)).steps[0].checkpoint).toBeNull();
    await server.api.post(`${R}/${run.id}/cancel`, {});
  });
});
