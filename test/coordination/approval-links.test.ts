import { expect, it } from 'vitest';
import { receiveOne } from '../helpers/agent.js';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { signIn } from '../helpers/session.js';

const C = '/api/v1/coordination';
const DAY_MS = 86_400_000;
const PASSWORD = 'correct horse battery';

/**
 * Approval links: signed, expiring, single-use, deciding as the one they were made for. The
 * event's link reaches every reader of the event log, so it shows the step and decides nothing.
 */
describeEachDialect('coordination: approval links', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });
  const anonymous = () => server.api.withKey(null);
  let plans = 0;
  let people = 0;

  async function startRun(steps: unknown[], input: Record<string, unknown> = {}, api = server.api): Promise<string> {
    const plan = await api.post(`${C}/plans`, { alias: `links-${dialect}-${++plans}`, steps });
    expect(plan.status, plan.text).toBe(201);
    const run = await api.post(`${C}/runs`, { plan_id: plan.body.data.id, input });
    expect(run.status, run.text).toBe(201);
    return run.body.data.id;
  }

  async function person(role = 'approver'): Promise<{ id: string; username: string; approver: string }> {
    const res = await server.api.post('/api/v1/auth/users', { username: `link-person-${dialect}-${++people}`, role, password: PASSWORD });
    expect(res.status, res.text).toBe(201);
    return { ...res.body.data, approver: `user:${res.body.data.username}` };
  }

  /** The token of a link made by `api` (an admin key by default) that decides as `approver`. */
  async function linkFor(runId: string, stepId: string, approver: string, api = server.api): Promise<string> {
    const res = await api.post(`${C}/runs/${runId}/steps/${stepId}/links`, { approver });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data).toMatchObject({ run_id: runId, step_id: stepId, approver, expires_at: expect.any(String) });
    const url = res.body.data.approve_url as string;
    expect(url).toMatch(new RegExp(`^${server.api.baseUrl}/console/approve/[\\w-]+\\.[\\w-]+$`));
    return url.slice(url.lastIndexOf('/') + 1);
  }

  /** The approve_url of the latest `type` event of a run, as the event log carries it. */
  async function eventLinkOf(runId: string, type: 'approval.requested' | 'input.requested'): Promise<string> {
    const events = (await server.api.get(`/api/v1/events?type=${type}&subject=${runId}&limit=500`)).body.data;
    const url = events.at(-1)?.data.approve_url as string;
    expect(url).toMatch(new RegExp(`^${server.api.baseUrl}/console/approve/[\\w-]+\\.[\\w-]+$`));
    return url.slice(url.lastIndexOf('/') + 1);
  }

  it("shows the step through the event's link but decides nothing with it: an agent cannot pass its own run's gate", async () => {
    const agent = await server.agent('gate-keeper');
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Ship {{input.version}}?' }], { version: '2.0' }, agent);
    // The agent reads its run's events, link included.
    const [event] = (await agent.get(`/api/v1/events?type=approval.requested&subject=${runId}`)).body.data;
    const token = event.data.approve_url.slice(event.data.approve_url.lastIndexOf('/') + 1);
    expect(token).toBe(await eventLinkOf(runId, 'approval.requested'));
    const shown = await anonymous().get(`${C}/approvals/${token}`);
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.data).toMatchObject({
      run_id: runId,
      step_id: 'gate',
      type: 'human_approval',
      prompt: 'Ship 2.0?',
      run_input: { version: '2.0' },
      approver: null,
    });
    for (const body of [{ approved: true }, { data: {} }]) {
      const refused = await anonymous().post(`${C}/approvals/${token}`, body);
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body.error.message).toMatch(/decides nothing by itself.*sign in/);
    }
    expect((await agent.post(`${C}/runs/${runId}/steps/gate/approve`, { approved: true })).status).toBe(403);
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.status).toBe('waiting');
  });

  it("sends each agent approver its own link, readable only by the step's approvers, and decides as that approver", async () => {
    const approver = await server.agent('link-approver');
    const other = await server.agent('link-other');
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Deploy?', approvers: ['link-approver'] }]);
    const message = await receiveOne(approver, 'link-approver');
    expect(message.event_name).toBe('approval.requested');
    const payload = message.payload as { run_id: string; step_id: string; prompt: string; approve_url: string };
    expect(payload).toMatchObject({ run_id: runId, step_id: 'gate', prompt: 'Deploy?' });
    const own = payload.approve_url.slice(payload.approve_url.lastIndexOf('/') + 1);
    expect(own).not.toBe(await eventLinkOf(runId, 'approval.requested'));
    expect((await approver.get(`/api/v1/events?type=approval.requested&subject=${runId}`)).body.data).toHaveLength(1);
    expect((await other.get(`/api/v1/events?type=approval.requested&subject=${runId}`)).body.data).toEqual([]);
    expect((await anonymous().get(`${C}/approvals/${own}`)).body.data.approver).toBe('link-approver');
    const decided = await anonymous().post(`${C}/approvals/${own}`, { approved: false, comment: 'not today' });
    expect(decided.body.data).toMatchObject({ status: 'failed', decided_by: 'link-approver', decided_by_kind: 'agent' });
    const [event] = (await server.api.get(`/api/v1/events?type=approval.decided&subject=${runId}`)).body.data;
    expect(event).toMatchObject({ actor: 'link-approver', data: { approved: false, decided_by: 'link-approver', comment: 'not today' } });
  });

  it('makes a link for a person that decides once as that person, recorded in the audit log', async () => {
    const alice = await person();
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Ship?', approvers: [alice.approver] }]);
    const token = await linkFor(runId, 'gate', alice.approver);
    for (let i = 0; i < 2; i++)
      expect((await anonymous().get(`${C}/approvals/${token}`)).body.data).toMatchObject({ approver: alice.approver });
    const decided = await anonymous().post(`${C}/approvals/${token}`, { approved: true, comment: 'go' });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body.data).toMatchObject({
      run_id: runId,
      step_id: 'gate',
      status: 'completed',
      decided_by: alice.id,
      decided_by_kind: 'user',
    });
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.status).toBe('completed');
    const again = await anonymous().post(`${C}/approvals/${token}`, { approved: false });
    expect(again.status).toBe(409);
    expect(again.body.error.message).toBe(`Step 'gate' was already decided by ${alice.id} at ${decided.body.data.decided_at}`);
    expect((await anonymous().get(`${C}/approvals/${token}`)).status).toBe(409);
    const audit = (await server.api.get(`/api/v1/audit?action=step.approve&resource_id=${runId}/gate`)).body.data;
    expect(audit).toEqual([
      expect.objectContaining({ actor: expect.objectContaining({ kind: 'user', id: alice.approver }), outcome: 'allowed' }),
    ]);
    const made = (await server.api.get(`/api/v1/audit?action=step.link&resource_id=${runId}/gate`)).body.data;
    expect(made).toEqual([expect.objectContaining({ actor: expect.objectContaining({ kind: 'admin' }), outcome: 'allowed' })]);
  });

  it('makes links only for people the step accepts, asked by themselves or an admin, and a disabled person decides nothing', async () => {
    const alice = await person();
    const bob = await person();
    const viewer = await person('viewer');
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Ship?', approvers: [alice.approver] }]);
    const make = (approver: string, api = server.api) => api.post(`${C}/runs/${runId}/steps/gate/links`, { approver });
    expect((await make(bob.approver)).status).toBe(409);
    expect((await make('user:nobody-here')).status).toBe(409);
    expect((await make('agent:someone')).status).toBe(400);
    // Alice may make her own link; Bob (signed in) may not make one for her, nor a viewer for anyone.
    const asAlice = await signIn(server.url, { username: alice.username, password: PASSWORD });
    const own = await asAlice.request('POST', `${C}/runs/${runId}/steps/gate/links`, { body: { approver: alice.approver } });
    expect(own.status, own.text).toBe(201);
    const asBob = await signIn(server.url, { username: bob.username, password: PASSWORD });
    expect((await asBob.request('POST', `${C}/runs/${runId}/steps/gate/links`, { body: { approver: alice.approver } })).status).toBe(403);
    const asViewer = await signIn(server.url, { username: viewer.username, password: PASSWORD });
    expect((await asViewer.request('POST', `${C}/runs/${runId}/steps/gate/links`, { body: { approver: viewer.approver } })).status).toBe(
      403,
    );
    // A link outlives nobody's rights: Alice disabled, her link decides nothing.
    const token = await linkFor(runId, 'gate', alice.approver);
    expect((await server.api.patch(`/api/v1/auth/users/${alice.id}`, { disabled: true })).status).toBe(200);
    const refused = await anonymous().post(`${C}/approvals/${token}`, { approved: true });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/no longer exists or is disabled/);
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.status).toBe('waiting');
  });

  it("takes human_input data through a person's link, validated against the step schema", async () => {
    const alice = await person();
    const runId = await startRun([
      { id: 'first', type: 'transform', output: { built: true } },
      {
        id: 'ask',
        type: 'human_input',
        prompt: 'Version?',
        depends_on: ['first'],
        schema: { type: 'object', required: ['version'], properties: { version: { type: 'string' } } },
      },
    ]);
    const token = await linkFor(runId, 'ask', alice.approver);
    const shown = (await anonymous().get(`${C}/approvals/${token}`)).body.data;
    expect(shown).toMatchObject({
      type: 'human_input',
      prompt: 'Version?',
      schema: { required: ['version'] },
      outputs: { first: { built: true } },
    });
    expect((await anonymous().post(`${C}/approvals/${token}`, { approved: true })).status).toBe(409);
    const invalid = await anonymous().post(`${C}/approvals/${token}`, { data: { version: 3 } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.details[0].field).toBe('data.version');
    const given = await anonymous().post(`${C}/approvals/${token}`, { data: { version: '3.1' } });
    expect(given.status, given.text).toBe(200);
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.output).toBeDefined();
    const again = await anonymous().post(`${C}/approvals/${token}`, { data: { version: '3.2' } });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual({ decided_by: alice.id, decided_at: given.body.data.decided_at });
  });

  it('refuses a link after its run was cancelled, after it expired, and after the step asks again', async () => {
    const alice = await person();
    const cancelledRun = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'A?' }]);
    const cancelledToken = await linkFor(cancelledRun, 'gate', alice.approver);
    await server.api.post(`${C}/runs/${cancelledRun}/cancel`, { reason: 'no longer needed' });
    const cancelled = await anonymous().post(`${C}/approvals/${cancelledToken}`, { approved: true });
    expect(cancelled.status).toBe(409);
    expect(cancelled.body.error.message).toMatch(/was cancelled/);

    const rejectedRun = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'B?' }]);
    const first = await linkFor(rejectedRun, 'gate', alice.approver);
    expect((await anonymous().post(`${C}/approvals/${first}`, { approved: false })).status).toBe(200);
    expect((await server.api.post(`${C}/runs/${rejectedRun}/redrive`)).status).toBe(200);
    const second = await linkFor(rejectedRun, 'gate', alice.approver);
    expect(second).not.toBe(first);
    const stale = await anonymous().post(`${C}/approvals/${first}`, { approved: true });
    expect(stale.status).toBe(409);
    expect(stale.body.error.message).toMatch(/earlier wait/);

    const waitingRun = await startRun([{ id: 'ask', type: 'human_input', prompt: 'C?' }]);
    const expiring = await linkFor(waitingRun, 'ask', alice.approver);
    clock.advance(8 * DAY_MS);
    const expired = await anonymous().post(`${C}/approvals/${expiring}`, { data: {} });
    expect(expired.status).toBe(409);
    expect(expired.body.error.message).toMatch(/expired at/);
    // The step itself still waits: the API with a key decides it.
    expect((await server.api.post(`${C}/runs/${waitingRun}/steps/ask/input`, { data: {} })).status).toBe(200);
    expect((await anonymous().post(`${C}/approvals/${second}`, { approved: true })).status).toBe(409);
  });

  it('lists the human steps waiting across runs (the approvals inbox), oldest first, until decided', async () => {
    const agent = await server.agent('inbox-reader');
    const first = await startRun(
      [{ id: 'gate', type: 'human_approval', prompt: 'E?', approvers: ['inbox-reader'], timeout_seconds: 3600 }],
      { n: 1 },
    );
    clock.advance(1000);
    const second = await startRun([{ id: 'ask', type: 'human_input', prompt: 'F?' }]);
    const pending = async () =>
      ((await agent.get(`${C}/approvals?limit=500`)).body.data as { run_id: string }[]).filter(
        (p) => p.run_id === first || p.run_id === second,
      );
    expect(await pending()).toEqual([
      expect.objectContaining({
        run_id: first,
        step_id: 'gate',
        type: 'human_approval',
        prompt: 'E?',
        approvers: ['inbox-reader'],
        schema: null,
        run_input: { n: 1 },
        expires_at: expect.any(String),
      }),
      expect.objectContaining({
        run_id: second,
        step_id: 'ask',
        type: 'human_input',
        prompt: 'F?',
        approvers: [],
        schema: { type: 'object' },
        expires_at: null,
      }),
    ]);
    expect((await agent.post(`${C}/runs/${first}/steps/gate/approve`, { approved: true })).status).toBe(200);
    expect((await pending()).map((p) => p.run_id)).toEqual([second]);
    expect((await anonymous().get(`${C}/approvals`)).status).toBe(401);
  });

  it('answers 404 for a token it did not sign and 400 for one that is not a token', async () => {
    const alice = await person();
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'D?' }]);
    const token = await linkFor(runId, 'gate', alice.approver);
    const [payload, signature] = token.split('.') as [string, string];
    const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace('"gate"', '"gatf"')).toString('base64url');
    for (const bad of [`${forged}.${signature}`, `${payload}.${signature.slice(1)}A`, `${payload}x.${signature}`]) {
      const res = await anonymous().post(`${C}/approvals/${bad}`, { approved: true });
      expect(res.status, bad).toBe(404);
    }
    expect((await anonymous().post(`${C}/approvals/not-a-token`, { approved: true })).status).toBe(400);
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.status).toBe('waiting');
  });
});
