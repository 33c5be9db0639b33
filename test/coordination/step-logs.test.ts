import { expect, it } from 'vitest';
import { receiveOne } from '../helpers/agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { R, useCoordination } from './fixture.js';

describeEachDialect('step logs', (dialect) => {
  const { server, unique, plan, start } = useCoordination(dialect);
  const logs = (runId: string, stepId: string) => `${R}/${runId}/steps/${stepId}/logs`;

  it('the executing agent appends lines; they are read with the run and told as run.step.log events', async () => {
    const a = unique('worker');
    const agent = await server.agent(a);
    const other = await server.agent(unique('other'));
    const id = await plan({
      steps: [
        { id: 'one', type: 'agent', agent: a },
        { id: 'two', type: 'agent', agent: a },
      ],
    });
    const run = await start(id);
    await receiveOne(agent, a);
    await receiveOne(agent, a);

    const first = await agent.post(logs(run.id, 'one'), { message: 'fetching' });
    expect(first.status, first.text).toBe(201);
    expect(first.body.data).toMatchObject({ step_id: 'one', attempt: 1, level: 'info', message: 'fetching' });
    expect((await agent.post(logs(run.id, 'two'), { message: 'slow source', level: 'warn' })).status).toBe(201);
    expect((await agent.post(logs(run.id, 'one'), { message: 'done' })).status).toBe(201);

    const all = await server.api.get(`${R}/${run.id}/logs`);
    expect(all.status).toBe(200);
    expect(all.body.data.map((l: any) => `${l.step_id}:${l.level}:${l.message}`)).toEqual([
      'one:info:fetching',
      'two:warn:slow source',
      'one:info:done',
    ]);
    expect(all.body.meta.total).toBe(3);
    const one = await server.api.get(`${R}/${run.id}/logs?step_id=one&limit=1`);
    expect(one.body.data.map((l: any) => l.message)).toEqual(['fetching']);
    expect(one.body.meta.total).toBe(2);

    const events = await server.api.get(`/api/v1/events?type=run.step.log&subject=${run.id}`);
    expect(events.status, events.text).toBe(200);
    expect(events.body.data.map((e: any) => e.data.message)).toEqual(expect.arrayContaining(['fetching', 'slow source', 'done']));

    expect((await other.post(logs(run.id, 'one'), { message: 'not mine' })).status).toBe(403);
    expect((await agent.post(logs(run.id, 'one'), { message: '' })).status).toBe(400);
    expect((await agent.post(logs(run.id, 'one'), { message: 'x', level: 'loud' })).status).toBe(400);
    expect((await agent.post(logs(run.id, 'one'), { message: 'x'.repeat(4001) })).status).toBe(400);
    expect((await server.api.get(`${R}/run_nope/logs`)).status).toBe(404);
    await server.api.post(`${R}/${run.id}/cancel`, {});
    expect((await agent.post(logs(run.id, 'one'), { message: 'too late' })).status).toBe(409);
  });
});
