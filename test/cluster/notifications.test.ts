import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { advance, agentChannel, titles } from '../helpers/notifications.js';
import { startServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const C = '/api/v1/coordination';
const RUNS = 10;

describeEachDialect('cluster notifications', (dialect) => {
  const database = useTestDatabase(dialect);

  it.runIf(dialect === 'postgres')(
    'two nodes on one database tell each alert transition and each human step reminder once',
    async () => {
      const clock = new FakeClock(Date.now());
      const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
      // Both evaluate alerts every 20 ms and fire approval timers on the same clock.
      const env = { SWITCHBOARD_ALERT_INTERVAL_MS: '20' };
      const a = await startServer(dialect, { database: database(), adminKey, clock, env });
      const b = await startServer(dialect, { database: database(), adminKey, clock, env });
      try {
        // An alert fires and resolves: one notification each, whichever node leads.
        const alerts = await agentChannel(a, 'cluster-alerts');
        const rule = await a.api.post('/api/v1/alerts/rules', {
          name: 'tasks burst',
          condition: { type: 'event_count', event_type: 'task.*', window_s: 60, threshold: 2 },
          channels: [alerts],
        });
        expect(rule.status, rule.text).toBe(201);
        for (const [api, title] of [
          [a.api, 'one'],
          [b.api, 'two'],
        ] as const)
          expect((await api.post('/core/api/v1/tasks', { title })).status).toBe(201);
        await waitFor(async () => (await titles(a, 'cluster-alerts')).length >= 1, 10_000);
        clock.advance(61_000);
        await waitFor(async () => (await titles(a, 'cluster-alerts')).length >= 2, 10_000);
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(await titles(b, 'cluster-alerts')).toEqual(['Firing: tasks burst', 'Resolved: tasks burst']);

        // Human steps' reminders come due together on both nodes: each is told once.
        const approvals = await agentChannel(b, 'cluster-approvals');
        const plan = await a.api.post(`${C}/plans`, {
          alias: 'cluster-reminders',
          steps: [{ id: 'gate', type: 'human_approval', notify: [approvals], remind_after_s: 60 }],
        });
        expect(plan.status, plan.text).toBe(201);
        for (let i = 0; i < RUNS; i++) {
          const run = await (i % 2 === 0 ? a : b).api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
          expect(run.status, run.text).toBe(201);
        }
        await waitFor(async () => (await titles(a, 'cluster-approvals')).length === RUNS, 10_000);
        await Promise.all([advance(a, clock, 61_000), advance(b, clock, 0)]);
        const reminded = async () => (await titles(a, 'cluster-approvals')).filter((t) => t?.startsWith('Reminder: '));
        await waitFor(async () => (await reminded()).length >= RUNS, 10_000);
        await Promise.all([advance(a, clock, 1_000), advance(b, clock, 1_000)]);
        await new Promise((resolve) => setTimeout(resolve, 500));
        const told = await reminded();
        expect(told).toHaveLength(RUNS);
        expect(new Set(told).size).toBe(RUNS);
        const events = (await a.api.get('/api/v1/events?type=approval.reminded&limit=500')).body.data;
        expect(events).toHaveLength(RUNS);
      } finally {
        await b.close();
        await a.close();
      }
    },
    60_000,
  );
});
