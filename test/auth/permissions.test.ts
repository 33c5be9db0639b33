import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const R = '/api/v1/coordination/runs';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface DocOperation {
  security?: unknown[];
  'x-permission'?: string;
}

/** Access control: permissions declared per operation, roles, scoped and expiring keys, people deciding human steps. */
describeEachDialect('access control', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });
  let plans = 0;

  async function key(body: Record<string, unknown>) {
    const res = await server.api.post('/api/v1/auth/keys', body);
    expect(res.status, res.text).toBe(201);
    return server.api.withKey(res.body.data.key);
  }

  async function waitingRun(step: Record<string, unknown>): Promise<string> {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `access-${dialect}-${++plans}`,
      steps: [{ id: 'gate', ...step }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(R, { plan_id: plan.body.data.id });
    expect(run.body.data.status).toBe('waiting');
    return run.body.data.id;
  }

  it('serves the catalogue; the agent role never decides human steps', async () => {
    const agent = await server.agent('catalogue-reader');
    const res = await agent.get('/api/v1/auth/permissions');
    expect(res.status).toBe(200);
    const byName = new Map<string, { roles: string[] }>(res.body.data.map((p: { name: string; roles: string[] }) => [p.name, p]));
    expect(byName.size).toBe(26);
    expect(byName.get('budgets:admin')!.roles).toEqual(['admin', 'operator']);
    expect(byName.get('usage:write')!.roles).toEqual(['admin', 'operator', 'agent']);
    expect(byName.get('approvals:decide')!.roles).toEqual(['admin', 'operator', 'approver']);
    expect(byName.get('keys:admin')!.roles).toEqual(['admin']);
    expect(byName.get('runs:read')!.roles).toEqual(['admin', 'operator', 'approver', 'viewer', 'agent']);
    const me = (await agent.get('/api/v1/auth/whoami')).body.data;
    expect(me).toMatchObject({ kind: 'agent', id: 'catalogue-reader', role: 'agent', agent_id: 'catalogue-reader' });
    expect(me.permissions).not.toContain('approvals:decide');
    expect((await server.api.get('/api/v1/auth/whoami')).body.data).toMatchObject({
      kind: 'admin',
      role: 'admin',
      permissions: Object.keys(Object.fromEntries(byName)),
    });
  });

  it('every operation declares a permission, and a key lacking it gets 403 naming it', async () => {
    const doc = (await server.api.get('/api/v1/openapi.json')).body as {
      paths: Record<string, Partial<Record<(typeof METHODS)[number], DocOperation>>>;
    };
    const catalogue = (await server.api.get('/api/v1/auth/permissions')).body.data.map((p: { name: string }) => p.name) as string[];
    const missing: string[] = [];
    const byPermission = new Map<string, { method: string; path: string }[]>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const operation = item[method];
        if (!operation || operation.security?.length === 0) continue;
        const permission = operation['x-permission'];
        if (permission === undefined || (permission !== 'authenticated' && !catalogue.includes(permission)))
          missing.push(`${method} ${path}: ${permission}`);
        else if (permission !== 'authenticated') byPermission.set(permission, [...(byPermission.get(permission) ?? []), { method, path }]);
      }
    }
    expect(missing).toEqual([]);
    // Hidden routes declare theirs too (the server refuses to start otherwise).
    const hidden = new Map(server.app.http.routeTable.map((route) => [`${route.method} ${route.url}`, route.permission]));
    expect(hidden.get('GET /metrics')).toBe('metrics:read');
    expect(hidden.get('GET /api/v1/messaging/channel')).toBe('messaging:write');
    expect((await (await key({ agent_id: 'no-metrics' })).get('/metrics')).status).toBe(403);
    expect(byPermission.size).toBeGreaterThanOrEqual(15);
    const wrong: string[] = [];
    for (const [permission, operations] of byPermission) {
      // An admin-kind key with every permission but this one.
      const lacking = await key({ role: 'admin', name: `lacks ${permission}`, scopes: catalogue.filter((name) => name !== permission) });
      for (const { method, path } of operations) {
        const url = path.replace(/\{[^}]+\}/g, 'x1');
        const res = await lacking.request(method.toUpperCase(), url, method === 'get' || method === 'delete' ? {} : { body: {} });
        if (res.status !== 403 || !String(res.body?.error?.message).includes(`'${permission}'`))
          wrong.push(`${method} ${path} → ${res.status} ${res.text.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('people decide human steps: an agent key gets 403, an approver key and a named agent 200', async () => {
    const starter = await server.agent('worker1');
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `access-own-${dialect}`,
      steps: [{ id: 'gate', type: 'human_approval' }],
    });
    const run = (await starter.post(R, { plan_id: plan.body.data.id })).body.data;
    const refused = await starter.post(`${R}/${run.id}/steps/gate/approve`, { approved: true });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.error.message).toContain("'approvals:decide'");
    expect((await server.api.get(`${R}/${run.id}`)).body.data.status).toBe('waiting');

    const approver = await key({ role: 'approver', name: 'alice' });
    const approved = await approver.post(`${R}/${run.id}/steps/gate/approve`, { approved: true });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.data.status).toBe('completed');
    const gate = approved.body.data.steps.find((s: { id: string }) => s.id === 'gate');
    expect(gate.output).toMatchObject({ decided_by: expect.stringMatching(/^key_/), decided_by_kind: 'key' });

    // A step naming an agent: that agent decides without the permission, other agents and unnamed people cannot.
    const named = await waitingRun({ type: 'human_approval', approvers: ['agent:reviewer'] });
    expect((await starter.post(`${R}/${named}/steps/gate/approve`, { approved: true })).status).toBe(403);
    const notNamed = await approver.post(`${R}/${named}/steps/gate/approve`, { approved: true });
    expect(notNamed.status).toBe(403);
    expect(notNamed.body.error.message).toContain('agent:reviewer');
    const reviewer = await server.agent('reviewer');
    const byReviewer = await reviewer.post(`${R}/${named}/steps/gate/approve`, { approved: false, comment: 'no' });
    expect(byReviewer.status, byReviewer.text).toBe(200);
    expect(byReviewer.body.data.steps[0].output).toMatchObject({ approved: false, decided_by: 'reviewer', decided_by_kind: 'agent' });

    // A step naming a role: keys of that role decide; the admin always may.
    const byRole = await waitingRun({ type: 'human_approval', approvers: ['role:approver'] });
    expect((await reviewer.post(`${R}/${byRole}/steps/gate/approve`, { approved: true })).status).toBe(403);
    expect((await approver.post(`${R}/${byRole}/steps/gate/approve`, { approved: true })).status).toBe(200);
    const byAdmin = await waitingRun({ type: 'human_approval', approvers: ['user:nobody'] });
    const admin = await server.api.post(`${R}/${byAdmin}/steps/gate/approve`, { approved: true });
    expect(admin.body.data.steps[0].output).toMatchObject({ decided_by: 'admin', decided_by_kind: 'admin' });

    // human_input: the same rule, without approvers.
    const input = await waitingRun({ type: 'human_input' });
    const agentInput = await starter.post(`${R}/${input}/steps/gate/input`, { data: {} });
    expect(agentInput.status).toBe(403);
    expect(agentInput.body.error.message).toContain("'approvals:decide'");
    expect((await approver.post(`${R}/${input}/steps/gate/input`, { data: {} })).status).toBe(200);
  });

  it('an agent key may be given approvals:decide in its scopes', async () => {
    const deciding = await key({ agent_id: 'trusted', scopes: ['runs:read', 'approvals:decide'] });
    const run = await waitingRun({ type: 'human_approval' });
    expect((await deciding.post(`${R}/${run}/steps/gate/approve`, { approved: true })).status).toBe(200);
  });

  it('scoped keys: narrowed to their scopes, never wider than their role or their creator', async () => {
    const scoped = await key({ agent_id: 'scoped', scopes: ['runs:read'] });
    expect((await scoped.get('/api/v1/auth/whoami')).body.data.permissions).toEqual(['runs:read']);
    expect((await scoped.get(R)).status).toBe(200);
    const write = await scoped.post('/api/v1/coordination/plans', { alias: 'x', steps: [] });
    expect(write.status).toBe(403);
    expect(write.body.error.message).toContain("'plans:write'");

    const wider = await server.api.post('/api/v1/auth/keys', { role: 'viewer', scopes: ['runs:write'] });
    expect(wider.status).toBe(400);
    expect(wider.body.error.details[0].field).toBe('scopes');
    const unknown = await server.api.post('/api/v1/auth/keys', { role: 'viewer', scopes: ['runs:everything'] });
    expect(unknown.status).toBe(400);

    // A creator holding keys:admin but little else cannot mint more than it holds.
    const keyAdmin = await key({ role: 'admin', scopes: ['keys:admin', 'runs:read'] });
    const viewer = await keyAdmin.post('/api/v1/auth/keys', { role: 'viewer' });
    expect(viewer.status).toBe(403);
    expect(viewer.body.error.message).toMatch(/Missing permission '[a-z]+:read'/);
    expect((await keyAdmin.post('/api/v1/auth/keys', { role: 'viewer', scopes: ['runs:read'] })).status).toBe(201);
    // An operator holds no keys:admin.
    const operator = await key({ role: 'operator' });
    const minted = await operator.post('/api/v1/auth/keys', { agent_id: 'x' });
    expect(minted.status).toBe(403);
    expect(minted.body.error.message).toContain("'keys:admin'");
  });

  it('expiring keys: 401 once expired; last_used_at is recorded', async () => {
    const expiresAt = new Date(clock.now() + 60_000).toISOString();
    const created = await server.api.post('/api/v1/auth/keys', { agent_id: 'brief', expires_at: expiresAt });
    expect(created.body.data).toMatchObject({ expires_at: expiresAt, last_used_at: null, scopes: null });
    const brief = server.api.withKey(created.body.data.key);
    expect((await brief.get('/api/v1/auth/whoami')).status).toBe(200);
    const listed = await waitFor(async () => {
      const keys = (await server.api.get('/api/v1/auth/keys?limit=500')).body.data as { id: string; last_used_at: string | null }[];
      return keys.find((k) => k.id === created.body.data.id && k.last_used_at !== null);
    });
    expect(Date.parse(listed.last_used_at!)).toBeLessThanOrEqual(clock.now());
    clock.advance(60_000);
    const expired = await brief.get('/api/v1/auth/whoami');
    expect(expired.status).toBe(401);
    expect(expired.body.error.message).toContain('expired');
    const past = await server.api.post('/api/v1/auth/keys', { agent_id: 'late', expires_at: new Date(clock.now() - 1000).toISOString() });
    expect(past.status).toBe(400);
  });
});
