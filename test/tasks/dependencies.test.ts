import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { activityOf, addDependency, CORE, createTask, expectConsistentDependencies, getTask, patchTask } from './fixtures.js';

/** Whether the depends_on edges of these tasks contain a cycle (depth-first search). */
async function hasCycle(api: Api, ids: string[]): Promise<boolean> {
  const next = new Map<string, string[]>();
  for (const id of ids) next.set(id, (await getTask(api, id)).depends_on);
  const state = new Map<string, 'open' | 'closed'>();
  const visit = (id: string): boolean => {
    if (state.get(id) === 'closed') return false;
    if (state.get(id) === 'open') return true;
    state.set(id, 'open');
    const found = (next.get(id) ?? []).some(visit);
    state.set(id, 'closed');
    return found;
  };
  return ids.some(visit);
}

describeEachDialect('task dependencies', (dialect) => {
  const server = useServer(dialect);

  it('adds a dependency (201, dep_ id), lists it and logs it on the dependent task', async () => {
    const agent = await server.agent('linker');
    const upstream = await createTask(server.api, { title: 'upstream' });
    const task = await createTask(agent, { title: 'task' });
    const res = await agent.post(`${CORE}/tasks/${task.id}/dependencies`, { depends_on: upstream.id });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.stringMatching(/^dep_/),
      task_id: task.id,
      depends_on: upstream.id,
      created_by: 'linker',
      created_at: expect.stringMatching(/Z$/),
    });
    const listed = await server.api.get(`${CORE}/tasks/${task.id}/dependencies`);
    expect(listed.body.data).toEqual([res.body.data]);
    expect((await server.api.get(`${CORE}/tasks/tsk_missing/dependencies`)).status).toBe(404);
    expect(await getTask(server.api, task.id)).toMatchObject({ depends_on: [upstream.id], blocked: true });
    expect(await getTask(server.api, upstream.id)).toMatchObject({ depends_on: [], blocked: false });
    expect((await activityOf(server.api, task.id)).at(-1)).toEqual(['linker', 'dependency_added', null, upstream.id]);
    // Nothing is logged on the task depended upon.
    expect(await activityOf(server.api, upstream.id)).toHaveLength(1);
  });

  it('creates a task with depends_on, blocked only by the dependencies not done', async () => {
    const done = await createTask(server.api, { title: 'done', status: 'done' });
    const open = await createTask(server.api, { title: 'open' });
    const ready = await createTask(server.api, { title: 'ready', depends_on: [done.id] });
    expect(ready).toMatchObject({ depends_on: [done.id], blocked: false });
    const blocked = await createTask(server.api, { title: 'blocked', depends_on: [done.id, open.id] });
    expect(blocked).toMatchObject({ depends_on: [done.id, open.id], blocked: true });
    expect(await activityOf(server.api, blocked.id)).toEqual([
      ['admin', 'created', null, 'blocked'],
      ['admin', 'dependency_added', null, done.id],
      ['admin', 'dependency_added', null, open.id],
    ]);
    await patchTask(server.api, open.id, { status: 'done' });
    expect((await getTask(server.api, blocked.id)).blocked).toBe(false);
  });

  it('answers 404 for unknown tasks and 409 for self, duplicate and cyclic dependencies', async () => {
    const a = await createTask(server.api, { title: 'a' });
    const b = await createTask(server.api, { title: 'b' });
    const c = await createTask(server.api, { title: 'c' });
    const post = (task: string, dependsOn: string) => server.api.post(`${CORE}/tasks/${task}/dependencies`, { depends_on: dependsOn });
    expect((await post('tsk_missing', a.id)).status).toBe(404);
    expect((await post(a.id, 'tsk_missing')).status).toBe(404);
    const self = await post(a.id, a.id);
    expect(self.status).toBe(409);
    expect(self.body.error.code).toBe('conflict');
    await addDependency(server.api, a.id, b.id);
    await addDependency(server.api, b.id, c.id);
    const duplicate = await post(a.id, b.id);
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.message).toMatch(/already depends/);
    const direct = await post(b.id, a.id);
    expect(direct.status).toBe(409);
    expect(direct.body.error.details).toEqual({ cycle: [b.id, a.id, b.id] });
    const indirect = await post(c.id, a.id);
    expect(indirect.status).toBe(409);
    expect(indirect.body.error.details).toEqual({ cycle: [c.id, a.id, b.id, c.id] });
    // A diamond is not a cycle.
    await addDependency(server.api, a.id, c.id);
    expect((await post(a.id, 'x')).status).toBe(404);
    expect((await server.api.post(`${CORE}/tasks/${a.id}/dependencies`, {})).status).toBe(400);
    expect((await server.api.post(`${CORE}/tasks/${a.id}/dependencies`, { depends_on: b.id, why: 'x' })).status).toBe(400);
    expect(await getTask(server.api, a.id)).toMatchObject({ depends_on: [b.id, c.id] });
    expect(await getTask(server.api, c.id)).toMatchObject({ depends_on: [] });
    expect(await hasCycle(server.api, [a.id, b.id, c.id])).toBe(false);
  });

  it('removes a dependency by its id or by the task depended upon, logging it', async () => {
    const upstream = await createTask(server.api, { title: 'upstream' });
    const other = await createTask(server.api, { title: 'other' });
    const remover = await server.agent('remover');
    const task = await createTask(remover, { title: 'task', depends_on: [upstream.id, other.id] });
    const [first] = (await server.api.get(`${CORE}/tasks/${task.id}/dependencies`)).body.data;
    const res = await remover.delete(`${CORE}/tasks/${task.id}/dependencies/${first.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id: first.id, deleted: true });
    expect(await getTask(server.api, task.id)).toMatchObject({ depends_on: [other.id], blocked: true });
    expect((await remover.delete(`${CORE}/tasks/${task.id}/dependencies/${first.id}`)).status).toBe(404);
    const byTask = await remover.delete(`${CORE}/tasks/${task.id}/dependencies/${other.id}`);
    expect(byTask.status).toBe(200);
    expect(byTask.body.data.id).toMatch(/^dep_/);
    expect(await getTask(server.api, task.id)).toMatchObject({ depends_on: [], blocked: false });
    expect((await activityOf(server.api, task.id)).slice(-2)).toEqual([
      ['remover', 'dependency_removed', upstream.id, null],
      ['remover', 'dependency_removed', other.id, null],
    ]);
    expect((await server.api.delete(`${CORE}/tasks/tsk_missing/dependencies/${first.id}`)).status).toBe(404);
    expect((await server.api.delete(`${CORE}/tasks/${upstream.id}/dependencies/dep_missing`)).status).toBe(404);
    // A cycle refused before is fine once the edge that closed it is gone.
    await addDependency(server.api, upstream.id, task.id);
    await expectConsistentDependencies(server.api, [upstream.id, other.id, task.id]);
  });

  it('never lets 20 concurrent inserts close a cycle', async () => {
    // A ring of 20 tasks: each insert alone is fine, all 20 together form a cycle. Each
    // transaction checks before any other commits, so only serialization keeps one out.
    const ring: string[] = [];
    for (let i = 0; i < 20; i++) ring.push((await createTask(server.api, { title: `ring ${i}` })).id);
    const results = await Promise.all(
      ring.map((id, i) => server.api.post(`${CORE}/tasks/${id}/dependencies`, { depends_on: ring[(i + 1) % ring.length] })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(19);
    expect(statuses.filter((s) => s === 409)).toHaveLength(1);
    expect(await hasCycle(server.api, ring)).toBe(false);

    // Pairs racing in opposite directions: one direction wins in each pair.
    const pairs: [string, string][] = [];
    for (let i = 0; i < 10; i++) pairs.push([(await createTask(server.api)).id, (await createTask(server.api)).id]);
    const raced = await Promise.all(
      pairs.flatMap(([x, y]) => [
        server.api.post(`${CORE}/tasks/${x}/dependencies`, { depends_on: y }),
        server.api.post(`${CORE}/tasks/${y}/dependencies`, { depends_on: x }),
      ]),
    );
    for (let i = 0; i < pairs.length; i++) {
      expect([raced[2 * i]!.status, raced[2 * i + 1]!.status].sort()).toEqual([201, 409]);
    }
    expect(await hasCycle(server.api, pairs.flat())).toBe(false);
    await expectConsistentDependencies(server.api, [...ring, ...pairs.flat()]);
  });

  it('sends the assignee exactly one task.unblocked when its last open dependency is done', async () => {
    const worker = await server.agent('unblock-worker');
    const finisher = await server.agent('finisher');
    const first = await createTask(server.api, { title: 'first' });
    const second = await createTask(finisher, { title: 'second' });
    const task = await createTask(server.api, { title: 'gated', assigned_to: 'unblock-worker', depends_on: [first.id, second.id] });
    await patchTask(server.api, first.id, { status: 'done' });
    expect(await receive(worker, 'unblock-worker', 1)).toEqual([]);
    await patchTask(finisher, second.id, { status: 'done' });
    const messages = await receive(worker, 'unblock-worker', 1);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({
      source: 'switchboard',
      destination: 'unblock-worker',
      event_name: 'task.unblocked',
      payload: { task_id: task.id, project_id: null, title: 'gated', unblocked_by: second.id },
    });
    await acknowledge(worker, messages[0]!.message_id);
    // Further changes that leave it unblocked send nothing more.
    await patchTask(server.api, second.id, { priority: 'high' });
    await patchTask(server.api, first.id, { title: 'first, renamed', status: 'done' });
    expect(await receive(worker, 'unblock-worker', 1)).toEqual([]);
    expect((await getTask(server.api, task.id)).blocked).toBe(false);
  });

  it('sends one task.unblocked when the last dependencies finish concurrently, and again per new unblocking', async () => {
    const worker = await server.agent('race-worker');
    const deps: string[] = [];
    for (let i = 0; i < 10; i++) deps.push((await createTask(server.api, { title: `dep ${i}` })).id);
    const task = await createTask(server.api, { title: 'fan-in', assigned_to: 'race-worker', depends_on: deps });
    await Promise.all(deps.map((id) => patchTask(server.api, id, { status: 'done' })));
    expect((await getTask(server.api, task.id)).blocked).toBe(false);
    const messages = await receive(worker, 'race-worker', 1);
    expect(messages.map((m) => [m.event_name, m.payload.task_id])).toEqual([['task.unblocked', task.id]]);
    expect(deps).toContain(messages[0]!.payload.unblocked_by);
    await acknowledge(worker, messages[0]!.message_id);

    // Reopening a dependency blocks the task again; removing that dependency unblocks it once more.
    await patchTask(server.api, deps[3]!, { status: 'todo' });
    expect((await getTask(server.api, task.id)).blocked).toBe(true);
    expect((await server.api.delete(`${CORE}/tasks/${task.id}/dependencies/${deps[3]}`)).status).toBe(200);
    const again = await receive(worker, 'race-worker', 1);
    expect(again.map((m) => m.payload)).toEqual([{ task_id: task.id, project_id: null, title: 'fan-in', unblocked_by: deps[3] }]);
    await acknowledge(worker, again[0]!.message_id);
    expect(await receive(worker, 'race-worker', 1)).toEqual([]);
  });

  it('sends nothing when the unblocked task has no assignee', async () => {
    const upstream = await createTask(server.api);
    const task = await createTask(server.api, { depends_on: [upstream.id] });
    await patchTask(server.api, upstream.id, { status: 'done' });
    expect((await getTask(server.api, task.id)).blocked).toBe(false);
    // It is assigned afterwards: the unblocking happened before, so nothing is owed.
    const agent = await server.agent('late-assignee');
    await patchTask(server.api, task.id, { assigned_to: 'late-assignee' });
    expect(await receive(agent, 'late-assignee', 1)).toEqual([]);
  });
});
