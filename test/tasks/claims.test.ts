import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { activityOf, CORE, createTask, getTask, patchTask } from './fixtures.js';

describeEachDialect('task claims', (dialect) => {
  const server = useServer(dialect);
  const claim = (api: typeof server.api, id: string, body?: Record<string, unknown>) => api.post(`${CORE}/tasks/${id}/claim`, body);
  const release = (api: typeof server.api, id: string) => api.post(`${CORE}/tasks/${id}/release`);

  it('assigns the task to the caller and starts it, logging both changes', async () => {
    const task = await createTask(server.api, { title: 'claim me' });
    const agent = await server.agent('claimer');
    const res = await claim(agent, task.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ id: task.id, assigned_to: 'claimer', status: 'in_progress' });
    expect(await activityOf(server.api, task.id)).toEqual([
      ['admin', 'created', null, 'claim me'],
      ['claimer', 'claimed', null, 'claimer'],
      ['claimer', 'status_changed', 'todo', 'in_progress'],
    ]);
    // Claiming again what one holds changes nothing and logs nothing.
    const again = await claim(agent, task.id, { expected_status: 'in_progress' });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
    expect(await activityOf(server.api, task.id)).toHaveLength(3);
  });

  it('refuses with 409 when another agent holds it, the status is unexpected, it is done or blocked', async () => {
    const held = await createTask(server.api, { assigned_to: 'holder' });
    const agent = await server.agent('latecomer');
    const taken = await claim(agent, held.id);
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatchObject({ code: 'conflict', details: { assigned_to: 'holder' } });

    const review = await createTask(server.api, { status: 'review' });
    const unexpected = await claim(agent, review.id, { expected_status: 'todo' });
    expect(unexpected.status).toBe(409);
    expect(unexpected.body.error.details).toEqual({ status: 'review' });
    // Without expected_status any status but done may be claimed.
    expect((await claim(agent, review.id)).body.data).toMatchObject({ status: 'in_progress', assigned_to: 'latecomer' });

    const done = await createTask(server.api, { status: 'done' });
    expect((await claim(agent, done.id)).status).toBe(409);

    const upstream = await createTask(server.api);
    const blocked = await createTask(server.api, { depends_on: [upstream.id] });
    const refused = await claim(agent, blocked.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.details).toEqual({ open_dependencies: 1 });
    expect(await getTask(server.api, blocked.id)).toMatchObject({ assigned_to: null, status: 'todo' });
    await patchTask(server.api, upstream.id, { status: 'done' });
    expect((await claim(agent, blocked.id)).status).toBe(200);

    expect((await claim(agent, 'tsk_missing')).status).toBe(404);
    expect((await claim(agent, held.id, { expected_status: 'Not A Slug' })).status).toBe(400);
    expect((await claim(agent, held.id, { colour: 'red' })).status).toBe(400);
    // Refused claims leave no trace.
    expect(await activityOf(server.api, held.id)).toHaveLength(1);
  });

  it('reopens a done task with expected_status done, blocking its dependents again', async () => {
    const done = await createTask(server.api, { status: 'done' });
    const dependent = await createTask(server.api, { depends_on: [done.id] });
    expect(dependent.blocked).toBe(false);
    const agent = await server.agent('reopener');
    const res = await claim(agent, done.id, { expected_status: 'done' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'in_progress', assigned_to: 'reopener' });
    expect((await getTask(server.api, dependent.id)).blocked).toBe(true);
  });

  it('lets an admin claim for a named agent; an agent may only claim for itself', async () => {
    const task = await createTask(server.api);
    const nameless = await claim(server.api, task.id);
    expect(nameless.status).toBe(400);
    expect(nameless.body.error.details).toEqual([{ field: 'agent_id', message: 'is required when the caller is not an agent' }]);
    const agent = await server.agent('honest');
    const impersonation = await claim(agent, task.id, { agent_id: 'someone-else' });
    expect(impersonation.status).toBe(403);
    const forOther = await claim(server.api, task.id, { agent_id: 'delegate' });
    expect(forOther.status).toBe(200);
    expect(forOther.body.data.assigned_to).toBe('delegate');
    expect((await activityOf(server.api, task.id)).slice(1)).toEqual([
      ['admin', 'claimed', null, 'delegate'],
      ['admin', 'status_changed', 'todo', 'in_progress'],
    ]);
  });

  it('gives exactly one of 50 concurrent claimers the task', async () => {
    const task = await createTask(server.api, { title: 'contested' });
    const agents = await Promise.all(Array.from({ length: 50 }, (_, i) => server.agent(`racer-${i}`)));
    const results = await Promise.all(agents.map((agent) => claim(agent, task.id, { expected_status: 'todo' })));
    const winners = results.filter((r) => r.status === 200);
    expect(winners).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(49);
    const winner = winners[0]!.body.data.assigned_to;
    expect(await getTask(server.api, task.id)).toMatchObject({ assigned_to: winner, status: 'in_progress' });
    const log = await activityOf(server.api, task.id);
    expect(log.filter(([, action]) => action === 'claimed')).toEqual([[winner, 'claimed', null, winner]]);
    expect(log.filter(([, action]) => action === 'status_changed')).toHaveLength(1);
  });

  it('gives exactly one winner when 50 claimers race without expected_status', async () => {
    const task = await createTask(server.api, { title: 'contested, no precondition' });
    const agents = await Promise.all(Array.from({ length: 50 }, (_, i) => server.agent(`free-racer-${i}`)));
    const results = await Promise.all(agents.map((agent) => claim(agent, task.id)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(49);
    expect((await activityOf(server.api, task.id)).filter(([, action]) => action === 'claimed')).toHaveLength(1);
  });

  it('releases: the holder or an admin, back to todo and unassigned, logged', async () => {
    const task = await createTask(server.api);
    const holder = await server.agent('releaser');
    const other = await server.agent('bystander');
    expect((await release(holder, task.id)).status).toBe(409);
    await claim(holder, task.id);
    const stolen = await release(other, task.id);
    expect(stolen.status).toBe(409);
    expect(stolen.body.error.details).toEqual({ assigned_to: 'releaser' });
    const res = await release(holder, task.id);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ assigned_to: null, status: 'todo' });
    expect((await activityOf(server.api, task.id)).slice(-2)).toEqual([
      ['releaser', 'released', 'releaser', null],
      ['releaser', 'status_changed', 'in_progress', 'todo'],
    ]);
    // Someone else may claim it now; an admin can take it back from them.
    await claim(other, task.id);
    const forced = await release(server.api, task.id);
    expect(forced.status).toBe(200);
    expect((await activityOf(server.api, task.id)).slice(-2)).toEqual([
      ['admin', 'released', 'bystander', null],
      ['admin', 'status_changed', 'in_progress', 'todo'],
    ]);
    // A status other than in_progress is kept on release.
    await patchTask(server.api, task.id, { assigned_to: 'releaser', status: 'review' });
    expect((await release(holder, task.id)).body.data).toMatchObject({ assigned_to: null, status: 'review' });
    expect((await release(holder, 'tsk_missing')).status).toBe(404);
  });
});
