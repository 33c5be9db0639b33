import { expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

interface LoggedEvent {
  id: string;
  type: string;
  subject: string;
  actor: string;
  data: any;
  reason: string | null;
}

/**
 * Each event type of design §8 comes from the change that should make it, and that change
 * makes no other: every step below asserts the whole list of events it appended.
 */
describeEachDialect('event types: each from its change', (dialect) => {
  const clock = new FakeClock(Date.now());
  // A one-second TTL: the health worker looks every 500 ms.
  const server = useServer(dialect, { clock, env: { SWITCHBOARD_HEALTH_TTL_S: '1' } });
  let cursor: string | undefined;

  /** The events appended since the previous call (as `api` may see them when given). */
  async function appended(api: Api = server.api): Promise<LoggedEvent[]> {
    const res = await api.get(`/api/v1/events?limit=500${cursor ? `&after=${cursor}` : ''}`);
    expect(res.status, res.text).toBe(200);
    const events = res.body.data as LoggedEvent[];
    if (api === server.api && events.length > 0) cursor = events.at(-1)!.id;
    return events;
  }
  const typesOf = (events: LoggedEvent[]) => events.map((e) => e.type);
  /** Waits for `count` more events (a worker's, or an agent's acknowledgement). */
  async function next(count: number): Promise<LoggedEvent[]> {
    const seen: LoggedEvent[] = [];
    await waitFor(async () => (seen.push(...(await appended())), seen.length >= count), 10_000);
    return seen;
  }

  it('tasks: created, commented, updated, unblocked, deleted', async () => {
    await appended();
    const upstream = (await server.api.post('/core/api/v1/tasks', { title: 'upstream' })).body.data;
    const downstream = (
      await server.api.post('/core/api/v1/tasks', { title: 'downstream', depends_on: [upstream.id], assigned_to: 'worker-1' })
    ).body.data;
    expect((await appended()).map((e) => [e.type, e.subject, e.actor])).toEqual([
      ['task.created', upstream.id, 'admin'],
      ['task.created', downstream.id, 'admin'],
    ]);
    // A comment is an event too: a task's page in the console hears of it (design §9: live, no polling).
    const comment = (await server.api.post(`/core/api/v1/tasks/${downstream.id}/comments`, { content: 'looks good' })).body.data;
    expect((await appended()).map((e) => [e.type, e.subject, e.actor, e.data])).toEqual([
      ['task.commented', downstream.id, 'admin', { task_id: downstream.id, comment }],
    ]);
    await server.api.patch(`/core/api/v1/tasks/${upstream.id}`, { status: 'done' });
    const [unblocked, updated] = await appended();
    expect([unblocked?.type, updated?.type]).toEqual(['task.unblocked', 'task.updated']);
    expect(unblocked).toMatchObject({ subject: downstream.id, data: { unblocked_by: upstream.id, assigned_to: 'worker-1' } });
    expect(updated).toMatchObject({
      subject: upstream.id,
      data: { task: { status: 'done' }, changes: [{ action: 'status_changed', from: 'todo', to: 'done' }] },
    });
    await server.api.delete(`/core/api/v1/tasks/${downstream.id}`);
    expect((await appended()).map((e) => [e.type, e.subject])).toEqual([['task.deleted', downstream.id]]);
  });

  it('keys: created and revoked (with the reason), for admins only', async () => {
    await appended();
    const created = (await server.api.post('/api/v1/auth/keys', { agent_id: 'keyed', role: 'agent' })).body.data;
    const [event] = await appended();
    expect(event).toMatchObject({
      type: 'key.created',
      subject: created.id,
      actor: 'admin',
      data: { key: { id: created.id, agent_id: 'keyed' } },
    });
    expect(JSON.stringify(event)).not.toContain(created.key);
    expect((await server.api.delete(`/api/v1/auth/keys/${created.id}?reason=leaked`)).status).toBe(200);
    expect((await appended()).map((e) => [e.type, e.reason])).toEqual([['key.revoked', 'leaked']]);
    const agent = await server.agent('key-watcher');
    expect(typesOf((await agent.get('/api/v1/events?type=key.>&limit=500')).body.data)).toEqual([]);
  });

  it('artifacts: created, version created, deleted; read only by who may read the artifact', async () => {
    const owner = await server.agent('art-owner');
    const friend = await server.agent('art-friend');
    const stranger = await server.agent('art-stranger');
    await appended();
    const artifact = (await owner.post('/api/v1/artifacts/snippets', { name: 'a.json', content: { v: 1 } })).body.data;
    expect((await appended()).map((e) => [e.type, e.subject, e.actor])).toEqual([['artifact.created', artifact.id, 'art-owner']]);
    await owner.post(`/api/v1/artifacts/${artifact.id}/share`, { with_agents: ['art-friend'] });
    const form = new FormData();
    form.set('file', new Blob(['{"v":2}'], { type: 'application/json' }), 'a.json');
    const res = await fetch(`${server.url}/api/v1/artifacts/${artifact.id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${owner.key}` },
      body: form,
    });
    expect(res.status, await res.text()).toBe(200);
    expect((await appended()).map((e) => [e.type, e.data.version])).toEqual([['artifact.version_created', 2]]);
    expect((await owner.delete(`/api/v1/artifacts/${artifact.id}`)).status).toBe(200);
    expect(typesOf(await appended())).toEqual(['artifact.deleted']);

    const about = (api: Api) => api.get(`/api/v1/events?subject=${artifact.id}`).then((r) => typesOf(r.body.data));
    expect(await about(owner)).toEqual(['artifact.created', 'artifact.version_created', 'artifact.deleted']);
    expect(await about(friend)).toEqual(['artifact.version_created', 'artifact.deleted']);
    expect(await about(stranger)).toEqual([]);
  });

  it('artifacts shared with a group are read by the members an admin granted', async () => {
    const owner = await server.agent('group-owner');
    const member = await server.agent('group-member');
    expect((await server.api.put('/api/v1/auth/groups/readers/members/group-member')).status).toBe(201);
    const artifact = (await owner.post('/api/v1/artifacts/snippets', { name: 'g.json', content: {} })).body.data;
    await owner.post(`/api/v1/artifacts/${artifact.id}/share`, { with_groups: ['readers'] });
    await owner.delete(`/api/v1/artifacts/${artifact.id}`);
    expect(typesOf((await member.get(`/api/v1/events?subject=${artifact.id}`)).body.data)).toEqual(['artifact.deleted']);
  });

  it('discovery: registered (first capability only), health changes found by the worker, deregistered', async () => {
    await appended();
    await server.api.post('/api/v1/discovery/capabilities', { agent_id: 'scout', capability: 'map.read' });
    await server.api.post('/api/v1/discovery/capabilities', { agent_id: 'scout', capability: 'map.write' });
    expect((await appended()).map((e) => [e.type, e.subject, e.data.capability?.capability])).toEqual([
      ['agent.registered', 'scout', 'map.read'],
    ]);
    await server.api.post('/api/v1/discovery/heartbeat', { agent_id: 'scout' });
    const [healthy] = await next(1);
    expect(healthy).toMatchObject({
      type: 'agent.health_changed',
      subject: 'scout',
      actor: 'system',
      data: { from: 'unknown', to: 'healthy' },
    });
    clock.advance(2_000);
    const [unhealthy] = await next(1);
    expect(unhealthy).toMatchObject({ type: 'agent.health_changed', data: { from: 'healthy', to: 'unhealthy' } });
    await server.api.delete('/api/v1/discovery/agents/scout');
    expect((await appended()).map((e) => [e.type, e.subject])).toEqual([['agent.deregistered', 'scout']]);
  });

  it('routines: paused, resumed, triggered (with reasons), execution succeeded and failed', async () => {
    const worker = await server.agent('routine-worker');
    const routine = (await server.api.post('/core/api/v1/routines', { name: 'r', trigger_type: 'webhook', target_agent: 'routine-worker' }))
      .body.data;
    await appended();
    await server.api.patch(`/core/api/v1/routines/${routine.id}`, { enabled: false, reason: 'maintenance' });
    await server.api.patch(`/core/api/v1/routines/${routine.id}`, { description: 'no event' });
    await server.api.patch(`/core/api/v1/routines/${routine.id}`, { enabled: true });
    expect((await appended()).map((e) => [e.type, e.reason])).toEqual([
      ['routine.paused', 'maintenance'],
      ['routine.resumed', null],
    ]);
    const execution = (await server.api.post(`/core/api/v1/routines/${routine.id}/trigger`, { reason: 'rerun' })).body.data;
    expect((await appended()).map((e) => [e.type, e.data.execution_id, e.reason])).toEqual([['routine.triggered', execution.id, 'rerun']]);
    await acknowledge(worker, (await receiveOne(worker, 'routine-worker')).message_id, { ok: true });
    expect((await appended()).map((e) => [e.type, e.actor, e.data.execution_id])).toEqual([
      ['routine.execution.succeeded', 'routine-worker', execution.id],
    ]);
    await server.api.post(`/core/api/v1/routines/${routine.id}/trigger`);
    await appended();
    await reject(worker, (await receiveOne(worker, 'routine-worker')).message_id, 'cannot', false);
    expect((await appended()).map((e) => [e.type, e.data.output ?? e.data.reason])).toEqual([
      ['message.dead_lettered', 'cannot'],
      ['routine.execution.failed', 'cannot'],
    ]);
  });

  it('runs: started, step completed, approval and input requested and given, waiting, completed', async () => {
    const worker = await server.agent('run-worker');
    const plan = (
      await server.api.post('/api/v1/coordination/plans', {
        alias: `events-${dialect}`,
        steps: [
          { id: 'work', type: 'agent', agent: 'run-worker', input: {} },
          { id: 'ok', type: 'human_approval', prompt: 'Ship it?', depends_on: ['work'] },
          { id: 'ask', type: 'human_input', prompt: 'Version?', depends_on: ['ok'] },
        ],
      })
    ).body.data;
    await appended();
    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} })).body.data;
    expect((await appended()).map((e) => [e.type, e.subject, e.actor, e.data.plan_id])).toEqual([
      ['run.started', run.id, 'admin', plan.id],
    ]);
    await acknowledge(worker, (await receiveOne(worker, 'run-worker')).message_id, { built: true });
    const acked = await appended();
    expect(typesOf(acked)).toEqual(['run.step.completed', 'approval.requested', 'run.waiting']);
    expect(acked[0]).toMatchObject({ actor: 'run-worker', data: { run_id: run.id, step_id: 'work', output: { built: true } } });
    expect(acked[1]).toMatchObject({ data: { run_id: run.id, step_id: 'ok', prompt: 'Ship it?' } });
    const approved = await server.api.post(`/api/v1/coordination/runs/${run.id}/steps/ok/approve`, {
      approved: true,
      reason: 'looks good',
    });
    expect(approved.status, approved.text).toBe(200);
    const decided = await appended();
    expect(typesOf(decided)).toEqual(['approval.decided', 'run.step.completed', 'input.requested']);
    expect(decided[0]).toMatchObject({ actor: 'admin', reason: 'looks good', data: { step_id: 'ok', approved: true } });
    expect(decided[2]).toMatchObject({ data: { step_id: 'ask', prompt: 'Version?' } });
    await server.api.post(`/api/v1/coordination/runs/${run.id}/steps/ask/input`, { data: { version: '1.0' }, reason: 'release' });
    const given = await appended();
    expect(typesOf(given)).toEqual(['input.submitted', 'run.step.completed', 'run.completed']);
    expect(given[0]).toMatchObject({ reason: 'release', data: { data: { version: '1.0' } } });
  });

  it('messages: dead-lettered (by a reject, by the reaper) and redriven with the reason, seen by the destination only', async () => {
    const sender = await server.agent('dl-sender');
    const worker = await server.agent('dl-worker');
    const bystander = await server.agent('dl-bystander');
    await appended();
    const sent = (await sender.post('/api/v1/messaging/send', { destination: 'dl-worker', event_name: 'job', max_deliveries: 1 })).body.data
      .message_id;
    await reject(worker, (await receiveOne(worker, 'dl-worker')).message_id, 'bad input', false);
    const [dead] = await appended();
    expect(dead).toMatchObject({
      type: 'message.dead_lettered',
      subject: sent,
      actor: 'dl-worker',
      data: { reason: 'bad input', message: { message_id: sent, destination: 'dl-worker' } },
    });
    const redrive = await worker.post(`/api/v1/messaging/dead-letters/${sent}/redrive`, { reason: 'retry after fix' });
    expect(redrive.status, redrive.text).toBe(201);
    const [redriven] = await appended();
    expect(redriven).toMatchObject({
      type: 'message.redriven',
      subject: sent,
      actor: 'dl-worker',
      reason: 'retry after fix',
      data: { redriven_as: redrive.body.data.message_id },
    });
    expect(typesOf((await worker.get('/api/v1/events?type=message.>&limit=500')).body.data)).toEqual([
      'message.dead_lettered',
      'message.redriven',
    ]);
    expect(typesOf((await bystander.get('/api/v1/events?type=message.>&limit=500')).body.data)).toEqual([]);
    // The redriven copy leased for a second and never settled: the reaper dead-letters it.
    const copy = (await worker.get('/api/v1/messaging/receive?agent_id=dl-worker&visibility_timeout=1')).body.data.messages;
    expect(copy).toHaveLength(1);
    clock.advance(6 * 60_000);
    const reaped = await next(1);
    expect(reaped.filter((e) => e.type.startsWith('message.')).map((e) => [e.type, e.subject, e.actor])).toEqual([
      ['message.dead_lettered', copy[0].message_id, 'system'],
    ]);
  });

  it('runs: step failed and run failed; redriven and cancelled with the reason', async () => {
    const worker = await server.agent('fail-worker');
    const plan = (
      await server.api.post('/api/v1/coordination/plans', {
        alias: `events-fail-${dialect}`,
        steps: [{ id: 'only', type: 'agent', agent: 'fail-worker', input: {} }],
      })
    ).body.data;
    const failing = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} })).body.data;
    await appended();
    await reject(worker, (await receiveOne(worker, 'fail-worker')).message_id, 'broken', false);
    const failed = await appended();
    expect(failed.map((e) => e.type)).toEqual(['message.dead_lettered', 'run.step.failed', 'run.failed']);
    expect(failed.slice(1).map((e) => e.subject)).toEqual([failing.id, failing.id]);
    expect(failed[1]!.data).toMatchObject({ step_id: 'only', error: expect.stringContaining('broken') });
    const redriven = await server.api.post(`/api/v1/coordination/runs/${failing.id}/redrive`, { reason: 'fixed the worker' });
    expect(redriven.status, redriven.text).toBe(200);
    expect((await appended()).map((e) => [e.type, e.subject, e.actor, e.reason, e.data.steps])).toEqual([
      ['run.redriven', failing.id, 'admin', 'fixed the worker', ['only']],
    ]);
    await acknowledge(worker, (await receiveOne(worker, 'fail-worker')).message_id, {});
    expect(typesOf(await appended())).toEqual(['run.step.completed', 'run.completed']);
    const cancelled = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} })).body.data;
    await appended();
    const res = await server.api.post(`/api/v1/coordination/runs/${cancelled.id}/cancel`, { reason: 'not needed' });
    expect(res.status, res.text).toBe(200);
    expect((await appended()).map((e) => [e.type, e.subject, e.actor, e.reason])).toEqual([
      ['run.cancelled', cancelled.id, 'admin', 'not needed'],
    ]);
  });
});
