import { expect, it } from 'vitest';
import { Api } from '../helpers/api.js';
import { waitFor } from '../helpers/wait.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer } from '../helpers/server.js';
import { signIn, signInAttempt } from '../helpers/session.js';

const U = '/api/v1/auth/users';
const R = '/api/v1/coordination/runs';
const PASSWORD = 'correct horse battery';

/** Users (design §3): managed by users:admin, their keys, disabling, and deciding human steps as `user:<username>`. */
describeEachDialect('users', (dialect) => {
  const server = useServer(dialect);
  let users = 0;

  async function user(role: string, extra: Record<string, unknown> = {}): Promise<{ id: string; username: string }> {
    const username = `${role}-${dialect}-${++users}`;
    const res = await server.api.post(U, { username, role, password: PASSWORD, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body.data;
  }

  it('creates, lists, reads, changes and deletes users, never showing a password hash', async () => {
    const created = await server.api.post(U, { username: 'ada', role: 'approver', display_name: 'Ada L.', password: PASSWORD });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      username: 'ada',
      role: 'approver',
      display_name: 'Ada L.',
      disabled: false,
      has_password: true,
    });
    expect(created.body.data.id).toMatch(/^usr_/);
    const id = created.body.data.id;
    expect((await server.api.post(U, { username: 'ada', role: 'viewer' })).status).toBe(409);

    const listed = await server.api.get(`${U}?limit=500`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((u: { id: string }) => u.id)).toContain(id);
    expect((await server.api.get(`${U}/${id}`)).body.data.username).toBe('ada');
    const changed = await server.api.patch(`${U}/${id}`, { role: 'operator', display_name: null, password: 'another long password' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({ role: 'operator', display_name: null });
    for (const text of [created.text, listed.text, changed.text]) expect(text).not.toMatch(/scrypt|password_hash/);

    expect((await signInAttempt(server.url, { username: 'ada', password: PASSWORD })).status).toBe(401);
    await signIn(server.url, { username: 'ada', password: 'another long password' });

    expect((await server.api.delete(`${U}/${id}`)).body.data).toEqual({ id, deleted: true });
    expect((await server.api.get(`${U}/${id}`)).status).toBe(404);
    expect((await server.api.delete(`${U}/${id}`)).status).toBe(404);
    // A user created without a password signs in only with keys.
    const keysOnly = await server.api.post(U, { username: 'keys-only', role: 'viewer' });
    expect(keysOnly.body.data.has_password).toBe(false);
  });

  it('validates usernames, passwords and roles (400), and needs users:admin (403)', async () => {
    for (const body of [
      { username: 'Upper', role: 'viewer' },
      { username: 'has space', role: 'viewer' },
      { username: 'x'.repeat(65), role: 'viewer' },
      { username: 'short-password', role: 'viewer', password: 'eleven char' },
      { username: 'long-password', role: 'viewer', password: 'x'.repeat(1025) },
      { username: 'agent-role', role: 'agent' },
      { username: 'unknown-field', role: 'viewer', admin: true },
    ]) {
      const res = await server.api.post(U, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await server.api.patch(`${U}/usr_unknown`, { disabled: true })).status).toBe(404);
    const operator = server.api.withKey((await server.api.post('/api/v1/auth/keys', { role: 'operator' })).body.data.key);
    // whoami of a platform key bound to no one: kind key, no user, no session.
    expect((await operator.get('/api/v1/auth/whoami')).body.data).toMatchObject({
      kind: 'key',
      role: 'operator',
      username: null,
      session: null,
      agent_id: null,
    });
    const refused = await operator.get(U);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain("'users:admin'");
    // users:admin without approvals:decide cannot make an approver.
    const narrow = await server.api.post('/api/v1/auth/keys', { role: 'admin', scopes: ['users:admin', 'runs:read'] });
    const granted = await server.api.withKey(narrow.body.data.key).post(U, { username: 'made-by-narrow', role: 'approver' });
    expect(granted.status).toBe(403);
    expect(granted.body.error.message).toMatch(/Missing permission '[a-z]+:[a-z]+'/);
  });

  it('binds keys to users: the key acts as the user, its role at most theirs; a user makes keys only for themselves', async () => {
    const approver = await user('approver');
    const other = await user('viewer');
    const key = await server.api.post('/api/v1/auth/keys', { user_id: approver.id, name: 'ci' });
    expect(key.status, key.text).toBe(201);
    expect(key.body.data).toMatchObject({ user_id: approver.id, role: 'approver', agent_id: null });
    const me = await server.api.withKey(key.body.data.key).get('/api/v1/auth/whoami');
    expect(me.body.data).toMatchObject({
      kind: 'user',
      id: approver.id,
      username: approver.username,
      role: 'approver',
      key_id: key.body.data.id,
      actor: `user:${approver.username}`,
      session: null,
    });
    expect(me.body.data.permissions).toContain('approvals:decide');

    const above = await server.api.post('/api/v1/auth/keys', { user_id: approver.id, role: 'operator' });
    expect(above.status).toBe(400);
    expect(above.body.error.details[0].field).toBe('role');
    expect((await server.api.post('/api/v1/auth/keys', { user_id: approver.id, agent_id: 'both' })).status).toBe(400);
    expect((await server.api.post('/api/v1/auth/keys', { user_id: 'usr_unknown' })).status).toBe(404);

    // Signed in, the user creates a narrower key of their own, never one for someone else or a wider one.
    const session = await signIn(server.url, { username: approver.username, password: PASSWORD });
    const own = await session.request('POST', '/api/v1/auth/keys', { body: { user_id: approver.id, role: 'viewer', name: 'mine' } });
    expect(own.status, own.text).toBe(201);
    expect(own.body.data).toMatchObject({ user_id: approver.id, role: 'viewer' });
    expect((await session.request('POST', '/api/v1/auth/keys', { body: { user_id: other.id } })).status).toBe(403);
    expect((await session.request('POST', '/api/v1/auth/keys', { body: { user_id: approver.id, role: 'admin' } })).status).toBe(403);
    expect((await session.request('POST', '/api/v1/auth/keys', { body: { agent_id: 'someone' } })).status).toBe(403);
    // A key bound to the user acts as them, so it may too.
    const viaKey = await server.api.withKey(key.body.data.key).post('/api/v1/auth/keys', { user_id: approver.id, role: 'viewer' });
    expect(viaKey.status).toBe(201);
  });

  it("a user lists and revokes their own keys without keys:admin, never another's", async () => {
    const approver = await user('approver');
    const other = await user('viewer');
    const othersKey = await server.api.post('/api/v1/auth/keys', { user_id: other.id, name: 'not yours' });
    const agentKey = await server.api.post('/api/v1/auth/keys', { agent_id: `own-keys-${dialect}` });
    const session = await signIn(server.url, { username: approver.username, password: PASSWORD });
    const own = await session.request('POST', '/api/v1/auth/keys', {
      body: { user_id: approver.id, scopes: ['runs:read'], expires_at: '2999-01-01T00:00:00Z' },
    });
    expect(own.status, own.text).toBe(201);

    const listed = await session.request('GET', '/api/v1/auth/keys?limit=500');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((key: { id: string }) => key.id)).toEqual([own.body.data.id]);
    expect(listed.body.data[0]).toMatchObject({ scopes: ['runs:read'], expires_at: '2999-01-01T00:00:00.000Z' });
    expect((await session.request('GET', `/api/v1/auth/keys?user_id=${other.id}`)).status).toBe(403);
    // An admin filters by user.
    const ofOther = await server.api.get(`/api/v1/auth/keys?user_id=${other.id}`);
    expect(ofOther.body.data.map((key: { id: string }) => key.id)).toEqual([othersKey.body.data.id]);

    for (const key of [othersKey, agentKey])
      expect((await session.request('DELETE', `/api/v1/auth/keys/${key.body.data.id}`)).status).toBe(403);
    expect((await server.api.withKey(othersKey.body.data.key).get('/api/v1/auth/whoami')).status).toBe(200);
    expect((await session.request('DELETE', `/api/v1/auth/keys/${own.body.data.id}`)).status).toBe(200);
    expect((await server.api.withKey(own.body.data.key).get('/api/v1/auth/whoami')).status).toBe(401);
    // A viewer key (no user) is no one's own: it neither lists nor revokes keys.
    const viewerKey = await server.api.post('/api/v1/auth/keys', { role: 'viewer' });
    expect((await server.api.withKey(viewerKey.body.data.key).get('/api/v1/auth/keys')).status).toBe(403);
  });

  it('disabling a user stops its sessions and keys at once, here and on another node; enabling restores its keys', async () => {
    const person = await user('operator');
    const key = (await server.api.post('/api/v1/auth/keys', { user_id: person.id })).body.data.key as string;
    const session = await signIn(server.url, { username: person.username, password: PASSWORD });
    const second = await startServer(dialect, { database: server.database, adminKey: server.adminKey });
    try {
      const onSecond = new Api(second.url, key);
      expect((await onSecond.get('/api/v1/auth/whoami')).status).toBe(200);
      expect((await server.api.withKey(key).get('/api/v1/auth/whoami')).status).toBe(200);
      expect((await session.request('GET', '/api/v1/auth/whoami')).status).toBe(200);

      const disabled = await server.api.patch(`${U}/${person.id}`, { disabled: true });
      expect(disabled.body.data.disabled).toBe(true);
      for (const res of [await server.api.withKey(key).get('/api/v1/auth/whoami'), await session.request('GET', '/api/v1/auth/whoami')]) {
        expect(res.status).toBe(401);
      }
      // The other node: as soon as its listener has the notice (see the role change below).
      await waitFor(async () => (await onSecond.get('/api/v1/auth/whoami')).status === 401, 2000);
      expect((await signInAttempt(server.url, { username: person.username, password: PASSWORD })).status).toBe(401);

      await server.api.patch(`${U}/${person.id}`, { disabled: false });
      expect((await onSecond.get('/api/v1/auth/whoami')).status).toBe(200);
      // The session was ended for good.
      expect((await session.request('GET', '/api/v1/auth/whoami')).status).toBe(401);

      // A lower role reaches the user's keys at their next request here, and on the other node
      // once its listener has the notice (PostgreSQL delivers it to both at the commit; this
      // node's answer waits for its own copy only).
      await server.api.patch(`${U}/${person.id}`, { role: 'viewer' });
      expect((await server.api.withKey(key).get('/api/v1/auth/whoami')).body.data.permissions).not.toContain('runs:write');
      await waitFor(async () => !(await onSecond.get('/api/v1/auth/whoami')).body.data.permissions.includes('runs:write'), 2000);
      // Deleting revokes them.
      await server.api.delete(`${U}/${person.id}`);
      expect((await server.api.withKey(key).get('/api/v1/auth/whoami')).status).toBe(401);
      await waitFor(async () => (await onSecond.get('/api/v1/auth/whoami')).status === 401, 2000);
    } finally {
      await second.close();
    }
  });

  it('a user named in approvers decides the step; other people and agents do not', async () => {
    const named = await user('approver');
    const unnamed = await user('approver');
    const viewer = await user('viewer');
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `user-approval-${dialect}`,
      steps: [{ id: 'gate', type: 'human_approval', approvers: [`user:${named.username}`, `user:${viewer.username}`] }],
    });
    const run = (await server.api.post(R, { plan_id: plan.body.data.id })).body.data;
    expect(run.status).toBe('waiting');
    const approve = `${R}/${run.id}/steps/gate/approve`;

    const other = await signIn(server.url, { username: unnamed.username, password: PASSWORD });
    const refused = await other.request('POST', approve, { body: { approved: true } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain(`user:${named.username}`);
    // Named, but a viewer: deciding still needs approvals:decide.
    const viewing = await signIn(server.url, { username: viewer.username, password: PASSWORD });
    expect((await viewing.request('POST', approve, { body: { approved: true } })).status).toBe(403);
    expect((await (await server.agent('some-agent')).post(approve, { approved: true })).status).toBe(403);

    const deciding = await signIn(server.url, { username: named.username, password: PASSWORD });
    const decided = await deciding.request('POST', approve, { body: { approved: true, comment: 'ok' } });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body.data.status).toBe('completed');
    expect(decided.body.data.steps[0].output).toMatchObject({ approved: true, decided_by: named.id, decided_by_kind: 'user' });
  });
});
