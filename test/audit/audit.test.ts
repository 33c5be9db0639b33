import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { signIn } from '../helpers/session.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Denials are appended when their window ends: long enough to hold a burst sent at once, short enough to wait for. */
const DENIAL_WINDOW_MS = 2000;

interface Entry {
  id: string;
  at: string;
  actor: { kind: string; id: string | null; key_id: string | null };
  action: string;
  resource: { type: string; id: string };
  outcome: 'allowed' | 'denied' | 'failed';
  status: number | null;
  request_id: string | null;
  ip: string | null;
  user_agent: string | null;
  count: number;
  prev_hash: string;
  hash: string;
}

describeEachDialect('audit log', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_AUDIT_DENIAL_WINDOW_MS: String(DENIAL_WINDOW_MS) } });

  async function entries(query: string, api: Api = server.api): Promise<Entry[]> {
    const res = await api.get(`/api/v1/audit?${query}`);
    expect(res.status).toBe(200);
    return res.body.data as Entry[];
  }

  async function verify(): Promise<{ ok: boolean; checked: number; first_broken?: string; anchor: unknown }> {
    const res = await server.api.get('/api/v1/audit/verify');
    expect(res.status).toBe(200);
    return res.body.data;
  }

  it('records people: a user created and disabled by the admin, its sign-in as that user, its sign-out', async () => {
    const created = await server.api.post('/api/v1/auth/users', {
      username: 'audited-ada',
      role: 'viewer',
      password: 'a long enough password',
    });
    expect(created.status, created.text).toBe(201);
    const userId = created.body.data.id as string;
    const session = await signIn(server.url, { username: 'audited-ada', password: 'a long enough password' });
    const sessionId = session.signedIn.body.data.principal.session.id as string;
    expect((await session.request('DELETE', '/api/v1/auth/sessions/current')).status).toBe(200);
    expect((await server.api.patch(`/api/v1/auth/users/${userId}`, { disabled: true })).status).toBe(200);

    const byAction = (list: Entry[]) => Object.fromEntries(list.map((e) => [e.action, e]));
    const ofUser = byAction(await entries(`resource_id=${userId}`));
    expect(ofUser['user.create']).toMatchObject({ actor: { kind: 'admin' }, outcome: 'allowed' });
    expect(ofUser['user.disable']).toMatchObject({ actor: { kind: 'admin' }, outcome: 'allowed' });
    const ofSession = byAction(await entries(`resource_id=${sessionId}`));
    expect(ofSession['session.create']).toMatchObject({ actor: { kind: 'user', id: 'user:audited-ada' }, ip: '127.0.0.1' });
    expect(ofSession['session.delete']).toMatchObject({ actor: { kind: 'user', id: 'user:audited-ada' } });
    expect((await verify()).ok).toBe(true);
  });

  it('records an allowed change with who made it, from where, and in which request', async () => {
    const res = await server.api.post('/core/api/v1/projects', { name: 'audited' }, { headers: { 'user-agent': 'audit-test/1.0' } });
    expect(res.status).toBe(201);
    const project = res.body.data.id as string;
    const [entry, ...more] = await entries(`resource_id=${project}`);
    expect(more).toHaveLength(0);
    expect(entry).toMatchObject({
      action: 'project.create',
      resource: { type: 'project', id: project },
      outcome: 'allowed',
      status: null,
      actor: { kind: 'admin', id: 'admin' },
      request_id: res.headers.get('x-request-id'),
      ip: '127.0.0.1',
      user_agent: 'audit-test/1.0',
      count: 1,
    });
    expect(entry!.actor.key_id).toMatch(/^key_/);
    expect(entry!.id).toMatch(/^aud_/);
    expect(entry!.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('records a change that rolled back as failed, and nothing as allowed', async () => {
    const project = (await server.api.post('/core/api/v1/projects', { name: 'busy' })).body.data.id as string;
    expect((await server.api.post('/core/api/v1/tasks', { title: 'keeps it busy', project_id: project })).status).toBe(201);
    const refused = await server.api.delete(`/core/api/v1/projects/${project}`);
    expect(refused.status).toBe(409);
    expect((await server.api.get(`/core/api/v1/projects/${project}`)).status).toBe(200);
    const recorded = await entries(`resource_id=${project}`);
    expect(recorded.map((e) => [e.action, e.outcome, e.status])).toEqual([
      ['project.delete', 'failed', 409],
      ['project.create', 'allowed', null],
    ]);
    expect(recorded[0]!.request_id).toBe(refused.headers.get('x-request-id'));
  });

  it('records a 403 and a 401 as denials, repeated ones as one entry with their count', async () => {
    const agent = await server.agent('audit-hammer');
    const hammered = 7;
    const burst = await Promise.all(
      Array.from({ length: hammered }, () => agent.post('/api/v1/webhooks', { url: 'http://127.0.0.1:1/x', types: ['run.*'] })),
    );
    expect(burst.map((res) => res.status)).toEqual(Array(hammered).fill(403));
    expect(await entries('actor=audit-hammer&outcome=denied')).toEqual([]);
    const denied = await waitFor(async () => (await entries('actor=audit-hammer&outcome=denied'))[0], 4 * DENIAL_WINDOW_MS);
    expect(denied).toMatchObject({
      action: 'webhooks.create',
      resource: { type: 'path', id: '/api/v1/webhooks' },
      status: 403,
      count: hammered,
      actor: { kind: 'agent', id: 'audit-hammer' },
      ip: '127.0.0.1',
    });
    expect((await entries('actor=audit-hammer&outcome=denied')).length).toBe(1);

    const stranger = server.api.withKey('sk_not_a_key');
    const refused = await Promise.all([1, 2, 3].map(() => stranger.delete('/api/v1/coordination/plans/plan_nothing')));
    expect(refused.map((res) => res.status)).toEqual([401, 401, 401]);
    const anonymous = await waitFor(
      async () => (await entries('action=coordination.deletePlan&outcome=denied')).find((e) => e.status === 401),
      4 * DENIAL_WINDOW_MS,
    );
    expect(anonymous).toMatchObject({
      actor: { kind: 'anonymous', id: null, key_id: null },
      count: 3,
      resource: { id: '/api/v1/coordination/plans/plan_nothing' },
    });
  });

  it('filters by actor, action, resource, outcome and time, and bounds the page', async () => {
    const agent = await server.agent('audit-filter');
    const before = new Date().toISOString();
    const plan = await agent.post('/api/v1/coordination/plans', {
      alias: `audit-filter-${dialect}`,
      steps: [{ id: 'a', type: 'wait', seconds: 1 }],
    });
    expect(plan.status).toBe(201);
    const id = plan.body.data.id as string;
    expect((await agent.delete(`/api/v1/coordination/plans/${id}`)).status).toBe(200);
    expect((await entries('actor=audit-filter')).map((e) => e.action)).toEqual(['plan.delete', 'plan.create']);
    expect((await entries(`actor=audit-filter&action=plan.create`)).map((e) => e.resource.id)).toEqual([id]);
    expect((await entries(`resource_id=${id}&outcome=allowed`)).length).toBe(2);
    expect((await entries(`resource_id=${id}&outcome=failed`)).length).toBe(0);
    expect((await entries(`resource_id=${id}&after=${encodeURIComponent(before)}`)).length).toBe(2);
    expect((await entries(`resource_id=${id}&before=${encodeURIComponent(before)}`)).length).toBe(0);
    const page = await server.api.get('/api/v1/audit?limit=1');
    expect(page.body.meta).toMatchObject({ limit: 1, offset: 0 });
    expect(page.body.meta.total).toBeGreaterThan(1);
    expect((await server.api.get('/api/v1/audit?limit=501')).status).toBe(400);
    expect((await server.api.get('/api/v1/audit?outcome=maybe')).status).toBe(400);
    // Reading the log needs audit:read, which agents lack.
    expect((await agent.get('/api/v1/audit')).status).toBe(403);
  });

  it('verifies the chain, and names the first entry whose row was changed in the database', async () => {
    const project = (await server.api.post('/core/api/v1/projects', { name: 'tampered' })).body.data.id as string;
    const intact = await verify();
    expect(intact).toMatchObject({ ok: true, anchor: null });
    expect(intact.checked).toBeGreaterThan(3);
    const [entry] = await entries(`resource_id=${project}`);
    const handle = openDatabase(server.database.options(1));
    try {
      await handle.db.updateTable('audit_log').set({ actor_id: 'someone-else' }).where('id', '=', entry!.id).execute();
      expect(await verify()).toMatchObject({ ok: false, first_broken: entry!.id });
      await handle.db.updateTable('audit_log').set({ actor_id: entry!.actor.id }).where('id', '=', entry!.id).execute();
      expect((await verify()).ok).toBe(true);
      // A deleted entry breaks the link of the one after it.
      expect((await server.api.post('/core/api/v1/projects', { name: 'after' })).status).toBe(201);
      const after = (await entries('limit=500')).find((e) => e.prev_hash === entry!.hash)!;
      await handle.db.deleteFrom('audit_log').where('id', '=', entry!.id).execute();
      expect(await verify()).toMatchObject({ ok: false, first_broken: after.id });
    } finally {
      await handle.close();
    }
  });
});
