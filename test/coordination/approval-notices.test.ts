import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { createTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, useServer, type TestServer } from '../helpers/server.js';
import { advance, agentChannel, inboxOf, titles } from '../helpers/notifications.js';
import { waitFor } from '../helpers/wait.js';

const C = '/api/v1/coordination';

describeEachDialect('coordination: human steps notify, remind and escalate', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });
  let plans = 0;

  async function startRun(steps: unknown[], api = server.api): Promise<string> {
    const plan = await api.post(`${C}/plans`, { alias: `notices-${dialect}-${++plans}`, steps });
    expect(plan.status, plan.text).toBe(201);
    const run = await api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    return run.body.data.id;
  }

  const eventsOf = async (runId: string, type: string) =>
    (await server.api.get(`/api/v1/events?type=${type}&subject=${runId}&limit=500`)).body.data as { data: Record<string, unknown> }[];

  it('refuses notice fields that do not go together, with the field named', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'human_approval', escalate_after_s: 60 }, 'steps[0].escalate_to'],
      [{ type: 'human_approval', escalate_to: ['user:bob'] }, 'steps[0].escalate_after_s'],
      [{ type: 'human_approval', remind_after_s: 60 }, 'steps[0].notify'],
      [{ type: 'human_input', escalate_after_s: 60, escalate_to: ['user:bob'] }, 'steps[0].escalate_to[0]'],
    ];
    for (const [step, field] of cases) {
      const res = await server.api.post(`${C}/plans`, { alias: `bad-notices-${dialect}-${++plans}`, steps: [{ id: 'gate', ...step }] });
      expect(res.status, res.text).toBe(400);
      expect(JSON.stringify(res.body.error)).toContain(field);
    }
    const bad = await server.api.post(`${C}/plans`, {
      alias: `bad-notices-${dialect}-${++plans}`,
      steps: [{ id: 'gate', type: 'human_approval', notify: ['not-a-channel'] }],
    });
    expect(bad.status).toBe(400);
  });

  it('tells the notify channels when the step waits, reminds once, escalates (approvers and channels), and tells the decision', async () => {
    const watch = `watch-${dialect}`;
    const boss = `boss-${dialect}`;
    const escalee = `escalee-${dialect}`;
    const owner = `owner-${dialect}`;
    const [watchChannel, bossChannel] = [await agentChannel(server, watch), await agentChannel(server, boss)];
    const starter = await server.agent(owner);
    const runId = await startRun(
      [
        {
          id: 'gate',
          type: 'human_approval',
          prompt: 'Ship it?',
          approvers: ['role:operator'],
          notify: [watchChannel],
          remind_after_s: 60,
          escalate_after_s: 120,
          escalate_to: [bossChannel, `agent:${escalee}`],
        },
      ],
      starter,
    );
    const waiting = await waitFor(async () => (await inboxOf(server, watch))[0]);
    expect(waiting.payload).toMatchObject({ title: `Approval needed: step gate of run ${runId}`, text: 'Ship it?', severity: 'warning' });
    expect(waiting.payload.human_step?.approve_url).toMatch(/\/console\/approve\//);

    await advance(server, clock, 59_000);
    await advance(server, clock, 2_000);
    await waitFor(async () => (await titles(server, watch)).length === 2, 10_000);
    const reminder = (await inboxOf(server, watch))[1]!.payload;
    expect(reminder.title).toBe(`Reminder: Approval needed: step gate of run ${runId}`);
    expect(reminder.human_step?.approve_url).toMatch(/\/console\/approve\//);
    expect(await eventsOf(runId, 'approval.reminded')).toHaveLength(1);

    await advance(server, clock, 60_000);
    await waitFor(async () => (await titles(server, boss)).length === 1, 10_000);
    expect(await titles(server, boss)).toEqual([`Escalated: Approval needed: step gate of run ${runId}`]);
    const [asked] = await inboxOf(server, escalee);
    expect(asked).toMatchObject({ event_name: 'approval.requested', payload: { run_id: runId, step_id: 'gate', escalated: true } });
    expect(asked!.payload.approve_url).toMatch(/\/console\/approve\//);
    expect((await eventsOf(runId, 'approval.escalated'))[0]!.data).toMatchObject({ added_approvers: [`agent:${escalee}`] });
    // Reminded once, escalated once: later passes tell nothing more.
    await advance(server, clock, 600_000);
    await advance(server, clock, 600_000);

    // The added approver decides (a named agent needs no approvals:decide).
    const agent = await server.agent(escalee);
    const approved = await agent.post(`${C}/runs/${runId}/steps/gate/approve`, { approved: true, comment: 'go' });
    expect(approved.status, approved.text).toBe(200);
    await waitFor(async () => (await titles(server, watch)).length === 3);
    expect(await titles(server, watch)).toEqual([
      `Approval needed: step gate of run ${runId}`,
      `Reminder: Approval needed: step gate of run ${runId}`,
      `Approved by ${escalee}: step gate of run ${runId}`,
    ]);
    expect((await titles(server, boss))[1]).toBe(`Approved by ${escalee}: step gate of run ${runId}`);
    const decided = (await inboxOf(server, owner)).filter((m) => m.event_name === 'approval.decided');
    expect(decided).toEqual([expect.objectContaining({ payload: expect.objectContaining({ run_id: runId, decided_by: escalee }) })]);
  });

  it('a step decided before its reminder is never reminded', async () => {
    const watch = `early-${dialect}`;
    const channel = await agentChannel(server, watch);
    const runId = await startRun([{ id: 'ask', type: 'human_input', prompt: 'Name?', notify: [channel], remind_after_s: 30 }]);
    await waitFor(async () => (await titles(server, watch)).length === 1);
    const res = await server.api.post(`${C}/runs/${runId}/steps/ask/input`, { data: { name: 'x' } });
    expect(res.status, res.text).toBe(200);
    await advance(server, clock, 31_000);
    await waitFor(async () => (await titles(server, watch)).length === 2);
    await advance(server, clock, 31_000);
    expect((await titles(server, watch))[1]).toMatch(/^Input submitted by /);
    expect(await titles(server, watch)).toHaveLength(2);
    expect(await eventsOf(runId, 'approval.reminded')).toEqual([]);
  });

  it('a reminder outlives a restart of the server', async () => {
    const database = await createTestDatabase(dialect, { migrated: true });
    const restartClock = new FakeClock(Date.now());
    let first: TestServer | null = await startServer(dialect, { database, clock: restartClock });
    try {
      const channel = await agentChannel(first, 'restart-watch');
      const plan = await first.api.post(`${C}/plans`, {
        alias: 'restart',
        steps: [{ id: 'gate', type: 'human_approval', notify: [channel], remind_after_s: 60 }],
      });
      const run = await first.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
      expect(run.status, run.text).toBe(201);
      await first.close();
      first = await startServer(dialect, { database, clock: restartClock, adminKey: first.adminKey });
      await advance(first, restartClock, 61_000);
      await waitFor(async () => (await titles(first!, 'restart-watch')).length === 2, 10_000);
      expect((await titles(first, 'restart-watch'))[1]).toMatch(/^Reminder: /);
    } finally {
      await first?.close();
      await database.drop();
    }
  });
});
