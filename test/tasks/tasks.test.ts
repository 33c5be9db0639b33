import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { FakeClock } from '../helpers/clock.js';
import {
  activityOf,
  addDependency,
  CORE,
  createProject,
  createTask,
  expectConsistentDependencies,
  getTask,
  patchTask,
} from './fixtures.js';

describeEachDialect('projects', (dialect) => {
  const server = useServer(dialect);

  it('creates, gets, lists, replaces and deletes a project', async () => {
    const agent = await server.agent('planner');
    const project = await createProject(agent, { name: 'Apollo', description: 'to the moon' });
    expect(project).toMatchObject({ name: 'Apollo', description: 'to the moon', created_by: 'planner' });
    expect(project.id).toMatch(/^prj_/);
    expect(project.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(project.updated_at).toBe(project.created_at);
    expect((await server.api.get(`${CORE}/projects/${project.id}`)).body.data).toEqual(project);

    const listed = await server.api.get(`${CORE}/projects?limit=500`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toContainEqual(project);
    expect(listed.body.meta).toMatchObject({ limit: 500, offset: 0 });

    const replaced = await server.api.put(`${CORE}/projects/${project.id}`, { name: 'Artemis' });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toMatchObject({ id: project.id, name: 'Artemis', description: null, created_by: 'planner' });
    expect((await server.api.get(`${CORE}/projects/${project.id}`)).body.data.name).toBe('Artemis');

    const removed = await server.api.delete(`${CORE}/projects/${project.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: project.id, deleted: true });
    expect((await server.api.get(`${CORE}/projects/${project.id}`)).status).toBe(404);
    expect((await server.api.delete(`${CORE}/projects/${project.id}`)).status).toBe(404);
    expect((await server.api.put(`${CORE}/projects/${project.id}`, { name: 'x' })).status).toBe(404);
  });

  it('validates project bodies', async () => {
    for (const body of [{}, { name: '' }, { name: 'x', colour: 'red' }, { name: 'x', description: 'd'.repeat(10_001) }]) {
      const res = await server.api.post(`${CORE}/projects`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const project = await createProject(server.api);
    expect((await server.api.put(`${CORE}/projects/${project.id}`, { description: 'no name' })).status).toBe(400);
  });

  it('pages projects in a stable order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await createProject(server.api, { name: `p${i}` })).id);
    const all = (await server.api.get(`${CORE}/projects?limit=500`)).body;
    const order = all.data.map((p: any) => p.id);
    expect(order.filter((id: string) => ids.includes(id))).toEqual(ids);
    const second = await server.api.get(`${CORE}/projects?limit=2&offset=2`);
    expect(second.body.data.map((p: any) => p.id)).toEqual(order.slice(2, 4));
    expect(second.body.meta).toMatchObject({ total: all.meta.total, limit: 2, offset: 2 });
    expect((await server.api.get(`${CORE}/projects?limit=0`)).status).toBe(400);
    expect((await server.api.get(`${CORE}/projects?limit=501`)).status).toBe(400);
  });

  it('refuses to delete a project with tasks unless cascade=true, which removes everything of its tasks', async () => {
    const agent = await server.agent('cleaner');
    // The project is the cleaner's to delete; the tasks in it go with it, whoever made them.
    const project = await createProject(agent, { name: 'doomed' });
    const other = await createProject(server.api, { name: 'survivor' });
    const a = await createTask(server.api, { project_id: project.id, title: 'a' });
    const b = await createTask(server.api, { project_id: project.id, title: 'b', depends_on: [a.id] });
    const outside = await createTask(server.api, { project_id: other.id, title: 'outside', depends_on: [b.id] });
    const unrelated = await createTask(server.api, { project_id: other.id, title: 'unrelated' });
    await server.api.post(`${CORE}/tasks/${a.id}/comments`, { content: 'note' });
    expect((await getTask(server.api, outside.id)).blocked).toBe(true);

    const refused = await server.api.delete(`${CORE}/projects/${project.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('conflict');
    expect(refused.body.error.details).toEqual({ tasks: 2 });
    expect((await server.api.get(`${CORE}/projects/${project.id}`)).status).toBe(200);

    const removed = await agent.delete(`${CORE}/projects/${project.id}?cascade=true`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: project.id, deleted: true });
    expect((await server.api.get(`${CORE}/projects/${project.id}`)).status).toBe(404);
    for (const id of [a.id, b.id]) {
      expect((await server.api.get(`${CORE}/tasks/${id}`)).status).toBe(404);
      expect((await server.api.get(`${CORE}/tasks/${id}/comments`)).status).toBe(404);
      expect((await server.api.get(`${CORE}/tasks/${id}/activity`)).status).toBe(404);
    }
    expect((await server.api.get(`${CORE}/tasks?project_id=${project.id}`)).body.meta.total).toBe(0);
    // The task outside lost its dependency on b (logged on it) and is ready now.
    const after = await getTask(server.api, outside.id);
    expect(after).toMatchObject({ depends_on: [], blocked: false });
    expect((await activityOf(server.api, outside.id)).at(-1)).toEqual(['cleaner', 'dependency_removed', b.id, null]);
    expect(await getTask(server.api, unrelated.id)).toMatchObject({ title: 'unrelated' });
    await expectConsistentDependencies(server.api, [outside.id, unrelated.id]);
    // The project is gone for good: a task cannot be created in it.
    expect((await server.api.post(`${CORE}/tasks`, { title: 'late', project_id: project.id })).status).toBe(404);
  });
});

describeEachDialect('tasks', (dialect) => {
  const server = useServer(dialect);

  it('creates a task with defaults, returns it and lists it', async () => {
    const agent = await server.agent('writer');
    const task = await createTask(agent, { title: 'Write the docs' });
    expect(task).toEqual({
      id: expect.stringMatching(/^tsk_/),
      project_id: null,
      title: 'Write the docs',
      description: null,
      status: 'todo',
      assigned_to: null,
      priority: 'none',
      created_by: 'writer',
      created_at: expect.stringMatching(/Z$/),
      updated_at: task.created_at,
      depends_on: [],
      blocked: false,
    });
    expect(await getTask(server.api, task.id)).toEqual(task);
    expect(await activityOf(server.api, task.id)).toEqual([['writer', 'created', null, 'Write the docs']]);
  });

  it('takes every task field on create, custom statuses included', async () => {
    const project = await createProject(server.api);
    const task = await createTask(server.api, {
      title: 'Review',
      description: 'read it all',
      status: 'in_review',
      project_id: project.id,
      assigned_to: 'reviewer-1',
      priority: 'urgent',
    });
    expect(task).toMatchObject({
      title: 'Review',
      description: 'read it all',
      status: 'in_review',
      project_id: project.id,
      assigned_to: 'reviewer-1',
      priority: 'urgent',
      created_by: 'admin',
    });
  });

  it('validates task bodies field by field', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'title'],
      [{ title: '' }, 'title'],
      [{ title: 'x', status: 'In Progress' }, 'status'],
      [{ title: 'x', status: '' }, 'status'],
      [{ title: 'x', priority: 'critical' }, 'priority'],
      [{ title: 'x', assigned_to: 'no spaces allowed' }, 'assigned_to'],
      [{ title: 'x', created_by: 'me' }, 'created_by'],
      [{ title: 'x', blocked: true }, 'blocked'],
    ];
    for (const [body, field] of cases) {
      const res = await server.api.post(`${CORE}/tasks`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(JSON.stringify(res.body.error), JSON.stringify(body)).toContain(field);
    }
    const unknownProject = await server.api.post(`${CORE}/tasks`, { title: 'x', project_id: 'prj_missing' });
    expect(unknownProject.status).toBe(404);
    expect(unknownProject.body.error.message).toContain('prj_missing');
    const unknownDependency = await server.api.post(`${CORE}/tasks`, { title: 'x', depends_on: ['tsk_missing'] });
    expect(unknownDependency.status).toBe(404);
    expect(unknownDependency.body.error.message).toContain('tsk_missing');
    const task = await createTask(server.api);
    for (const body of [{ status: 'DONE' }, { priority: 'soon' }, { title: '' }, { depends_on: [] }, { created_by: 'x' }]) {
      expect((await server.api.patch(`${CORE}/tasks/${task.id}`, body)).status, JSON.stringify(body)).toBe(400);
    }
    expect((await server.api.patch(`${CORE}/tasks/${task.id}`, { project_id: 'prj_missing' })).status).toBe(404);
    expect((await server.api.patch(`${CORE}/tasks/tsk_missing`, { title: 'y' })).status).toBe(404);
    // Nothing was changed by the refused requests.
    expect(await activityOf(server.api, task.id)).toHaveLength(1);
  });

  it('logs every PATCH change with its actor, from and to, in the same order', async () => {
    const clock = new FakeClock(Date.parse('2026-03-01T10:00:00.000Z'));
    const local = await startServer(dialect, { clock });
    try {
      const alice = await local.agent('alice');
      const bob = await local.agent('bob');
      const p1 = await createProject(alice, { name: 'one' });
      const p2 = await createProject(alice, { name: 'two' });
      // Assigned to bob, who may then change alice's task (ownership: creator or assignee).
      const task = await createTask(alice, { title: 'draft', project_id: p1.id, assigned_to: 'bob' });
      clock.advance(60_000);
      const changed = await patchTask(bob, task.id, {
        title: 'final',
        description: 'all of it',
        status: 'in_progress',
        priority: 'high',
        project_id: p2.id,
        assigned_to: 'carol',
      });
      expect(changed).toMatchObject({
        title: 'final',
        description: 'all of it',
        status: 'in_progress',
        priority: 'high',
        project_id: p2.id,
        assigned_to: 'carol',
        created_by: 'alice',
        created_at: '2026-03-01T10:00:00.000Z',
        updated_at: '2026-03-01T10:01:00.000Z',
      });
      clock.advance(60_000);
      // Fields sent with their current value are no change and bump nothing.
      expect(await patchTask(alice, task.id, { title: 'final', priority: 'high' })).toEqual(changed);
      await patchTask(alice, task.id, { description: null, assigned_to: null, project_id: null, status: 'done' });
      expect(await activityOf(local.api, task.id)).toEqual([
        ['alice', 'created', null, 'draft'],
        ['bob', 'title_changed', 'draft', 'final'],
        ['bob', 'description_changed', null, 'all of it'],
        ['bob', 'status_changed', 'todo', 'in_progress'],
        ['bob', 'priority_changed', 'none', 'high'],
        ['bob', 'project_changed', p1.id, p2.id],
        ['bob', 'assigned', 'bob', 'carol'],
        ['alice', 'description_changed', 'all of it', null],
        ['alice', 'status_changed', 'in_progress', 'done'],
        ['alice', 'project_changed', p2.id, null],
        ['alice', 'assigned', 'carol', null],
      ]);
      const entries = (await local.api.get(`${CORE}/tasks/${task.id}/activity`)).body.data;
      expect(entries[0]).toEqual({
        id: expect.stringMatching(/^act_/),
        task_id: task.id,
        actor: 'alice',
        action: 'created',
        from: null,
        to: 'draft',
        created_at: '2026-03-01T10:00:00.000Z',
      });
      expect(entries.at(-1).created_at).toBe('2026-03-01T10:02:00.000Z');
    } finally {
      await local.close();
    }
  });

  it('filters by status, project, assignee, priority and blocked, in a stable order with pagination', async () => {
    const project = await createProject(server.api, { name: 'filters' });
    const p = project.id;
    const a = await createTask(server.api, { project_id: p, title: 'a', status: 'todo', priority: 'low', assigned_to: 'fa' });
    const b = await createTask(server.api, { project_id: p, title: 'b', status: 'in_progress', priority: 'high', assigned_to: 'fb' });
    const c = await createTask(server.api, { project_id: p, title: 'c', status: 'todo', priority: 'high', depends_on: [b.id] });
    const d = await createTask(server.api, { project_id: p, title: 'd', status: 'done', priority: 'low', assigned_to: 'fa' });
    const ids = async (query: string) => {
      const res = await server.api.get(`${CORE}/tasks?project_id=${p}&limit=500${query}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.meta.total).toBe(res.body.data.length);
      return res.body.data.map((t: any) => t.id);
    };
    expect(await ids('')).toEqual([a.id, b.id, c.id, d.id]);
    expect(await ids('&status=todo')).toEqual([a.id, c.id]);
    expect(await ids('&priority=high')).toEqual([b.id, c.id]);
    expect(await ids('&assigned_to=fa')).toEqual([a.id, d.id]);
    expect(await ids('&assigned_to=fa&status=done')).toEqual([d.id]);
    expect(await ids('&blocked=true')).toEqual([c.id]);
    expect(await ids('&blocked=false')).toEqual([a.id, b.id, d.id]);
    expect(await ids('&status=nothing-here')).toEqual([]);
    const page = await server.api.get(`${CORE}/tasks?project_id=${p}&limit=2&offset=1`);
    expect(page.body.data.map((t: any) => t.id)).toEqual([b.id, c.id]);
    expect(page.body.meta).toMatchObject({ total: 4, limit: 2, offset: 1 });
    expect(page.body.data[1]).toMatchObject({ depends_on: [b.id], blocked: true });
    const first = await server.api.get(`${CORE}/tasks?project_id=${p}&limit=3`);
    expect(first.body.data.map((t: any) => t.id)).toEqual([a.id, b.id, c.id]);
    expect(first.body.meta).toMatchObject({ total: 4, limit: 3, offset: 0 });
    const beyond = await server.api.get(`${CORE}/tasks?project_id=${p}&limit=2&offset=10`);
    expect(beyond.body).toMatchObject({ data: [], meta: { total: 4 } });
    for (const query of ['priority=soon', 'blocked=maybe', 'limit=-1', 'offset=x', 'status=Bad']) {
      expect((await server.api.get(`${CORE}/tasks?${query}`)).status, query).toBe(400);
    }
  });

  it('deletes a task with its comments and activity, and frees its dependents', async () => {
    const agent = await server.agent('deleter');
    const upstream = await createTask(agent, { title: 'upstream' });
    const keeper = await createTask(server.api, { title: 'keeper' });
    const task = await createTask(server.api, { title: 'downstream', depends_on: [upstream.id, keeper.id] });
    expect(task.blocked).toBe(true);
    await server.api.post(`${CORE}/tasks/${upstream.id}/comments`, { content: 'bye' });
    const removed = await agent.delete(`${CORE}/tasks/${upstream.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: upstream.id, deleted: true });
    expect((await server.api.get(`${CORE}/tasks/${upstream.id}`)).status).toBe(404);
    expect((await server.api.delete(`${CORE}/tasks/${upstream.id}`)).status).toBe(404);
    expect(await getTask(server.api, task.id)).toMatchObject({ depends_on: [keeper.id], blocked: true });
    expect((await activityOf(server.api, task.id)).at(-1)).toEqual(['deleter', 'dependency_removed', upstream.id, null]);
    await expectConsistentDependencies(server.api, [task.id, keeper.id]);
    await patchTask(server.api, keeper.id, { status: 'done' });
    expect((await getTask(server.api, task.id)).blocked).toBe(false);
  });

  it('adds and lists comments, oldest first, logging each', async () => {
    const task = await createTask(server.api);
    const ann = await server.agent('ann');
    const ben = await server.agent('ben');
    const first = await ann.post(`${CORE}/tasks/${task.id}/comments`, { content: 'first!' });
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual({
      id: expect.stringMatching(/^cmt_/),
      task_id: task.id,
      author: 'ann',
      content: 'first!',
      created_at: expect.stringMatching(/Z$/),
    });
    const second = (await ben.post(`${CORE}/tasks/${task.id}/comments`, { content: 'second' })).body.data;
    const listed = await server.api.get(`${CORE}/tasks/${task.id}/comments`);
    expect(listed.body.data).toEqual([first.body.data, second]);
    expect(listed.body.meta).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect((await server.api.get(`${CORE}/tasks/${task.id}/comments?limit=1&offset=1`)).body.data).toEqual([second]);
    expect((await activityOf(server.api, task.id)).slice(1)).toEqual([
      ['ann', 'comment_added', null, first.body.data.id],
      ['ben', 'comment_added', null, second.id],
    ]);
    expect((await server.api.post(`${CORE}/tasks/${task.id}/comments`, {})).status).toBe(400);
    expect((await server.api.post(`${CORE}/tasks/${task.id}/comments`, { content: '' })).status).toBe(400);
    expect((await server.api.post(`${CORE}/tasks/tsk_missing/comments`, { content: 'x' })).status).toBe(404);
    expect((await server.api.get(`${CORE}/tasks/tsk_missing/comments`)).status).toBe(404);
  });

  it('pages the activity log oldest first', async () => {
    const task = await createTask(server.api, { title: 't0' });
    for (let i = 1; i <= 6; i++) await patchTask(server.api, task.id, { title: `t${i}` });
    const all = (await server.api.get(`${CORE}/tasks/${task.id}/activity`)).body;
    expect(all.meta.total).toBe(7);
    expect(all.data.map((e: any) => e.to)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6']);
    const page = (await server.api.get(`${CORE}/tasks/${task.id}/activity?limit=3&offset=3`)).body;
    expect(page.data.map((e: any) => e.to)).toEqual(['t3', 't4', 't5']);
    expect(page.meta).toMatchObject({ total: 7, limit: 3, offset: 3 });
    expect((await server.api.get(`${CORE}/tasks/tsk_missing/activity`)).status).toBe(404);
  });

  it('requires authentication on every tasks route', async () => {
    const task = await createTask(server.api);
    for (const [method, path] of [
      ['GET', '/projects'],
      ['POST', '/projects'],
      ['GET', '/tasks'],
      ['GET', `/tasks/${task.id}`],
      ['PATCH', `/tasks/${task.id}`],
      ['POST', `/tasks/${task.id}/claim`],
      ['GET', `/tasks/${task.id}/activity`],
    ]) {
      const res = await server.api.request(method!, `${CORE}${path}`, { key: null, body: method === 'GET' ? undefined : {} });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it('shows a dependency in depends_on and blocked until it is done', async () => {
    const first = await createTask(server.api, { title: 'first' });
    const second = await createTask(server.api, { title: 'second' });
    await addDependency(server.api, second.id, first.id);
    expect(await getTask(server.api, second.id)).toMatchObject({ depends_on: [first.id], blocked: true });
    await patchTask(server.api, first.id, { status: 'done' });
    expect(await getTask(server.api, second.id)).toMatchObject({ depends_on: [first.id], blocked: false });
    await patchTask(server.api, first.id, { status: 'reopened' });
    expect((await getTask(server.api, second.id)).blocked).toBe(true);
  });
});
