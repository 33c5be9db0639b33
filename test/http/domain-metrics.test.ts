import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** The value of one series of the exposition text (0 when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describeEachDialect('domain metrics', (dialect) => {
  const server = useServer(dialect);
  const scrape = async () => (await server.api.get('/metrics')).text;

  it('move as messages, runs, routines, webhooks and agents do', async () => {
    const worker = await server.agent('metrics-worker');
    expect((await worker.post('/api/v1/discovery/capabilities', { capability: 'metrics.work' })).status).toBe(201);
    expect((await worker.post('/api/v1/discovery/heartbeat', { load: 0.1 })).status).toBe(200);
    // A webhook to a port nobody listens on: its attempt fails and is retried later.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    expect((await server.api.post('/api/v1/webhooks', { url: `http://127.0.0.1:${port}/hook`, types: ['run.started'] })).status).toBe(201);
    const before = await scrape();

    // A run of one agent step: sent, received, acknowledged; the run completes.
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: 'metered',
      steps: [{ id: 'work', type: 'agent', agent: 'metrics-worker' }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    const step = await worker.get('/api/v1/messaging/receive?agent_id=metrics-worker&timeout=5');
    expect(step.body.data.messages).toHaveLength(1);
    expect(
      (await worker.post('/api/v1/messaging/acknowledge', { message_id: step.body.data.messages[0].message_id, output: { ok: true } }))
        .status,
    ).toBe(200);
    await waitFor(
      async () => (await server.api.get(`/api/v1/coordination/runs/${run.body.data.id}`)).body.data.status === 'completed',
      10_000,
    );

    // A direct message rejected for good, and two left waiting in another inbox.
    expect((await server.api.post('/api/v1/messaging/send', { destination: 'metrics-worker', event_name: 'orders.created' })).status).toBe(
      201,
    );
    const order = await worker.get('/api/v1/messaging/receive?agent_id=metrics-worker&timeout=5');
    const rejected = await worker.post('/api/v1/messaging/reject', {
      message_id: order.body.data.messages[0].message_id,
      reason: 'bad order',
      requeue: false,
    });
    expect(rejected.body.data.status).toBe('dead_lettered');
    for (let i = 0; i < 2; i++)
      expect((await server.api.post('/api/v1/messaging/send', { destination: 'metrics-idle', event_name: 'orders.created' })).status).toBe(
        201,
      );

    // A routine firing every second.
    expect(
      (
        await server.api.post('/core/api/v1/routines', {
          name: 'metered',
          trigger_type: 'cron',
          cron_expression: '* * * * * *',
          target_agent: 'metrics-idle',
        })
      ).status,
    ).toBe(201);

    const after = await waitFor(async () => {
      const text = await scrape();
      const fired = sample(text, 'switchboard_routine_fire_lag_seconds_count') > 0;
      const attempted = sample(text, 'switchboard_webhook_deliveries_total{outcome="failed"}') > 0;
      return fired && attempted ? text : undefined;
    }, 15_000);
    const moved = (series: string) => sample(after, series) - sample(before, series);
    expect(moved('switchboard_messages_sent_total{class="plan"}')).toBe(1);
    expect(moved('switchboard_messages_sent_total{class="orders"}')).toBe(3);
    expect(moved('switchboard_messages_settled_total{outcome="acked",class="plan"}')).toBe(1);
    expect(moved('switchboard_messages_settled_total{outcome="dead_lettered",class="orders"}')).toBe(1);
    expect(moved('switchboard_message_queued_seconds_count{origin="plan_step"}')).toBe(1);
    expect(moved('switchboard_message_queued_seconds_count{origin="direct"}')).toBe(1);
    expect(moved('switchboard_runs_started_total')).toBe(1);
    expect(moved('switchboard_runs_finished_total{status="completed"}')).toBe(1);
    expect(moved('switchboard_run_step_duration_seconds_count{status="completed"}')).toBe(1);
    expect(sample(after, 'switchboard_inbox_depth{agent="metrics-idle"}')).toBeGreaterThanOrEqual(2);
    expect(sample(after, 'switchboard_inbox_oldest_pending_age_seconds{agent="metrics-idle"}')).toBeGreaterThanOrEqual(0);
    expect(sample(after, 'switchboard_agents{health="healthy"}')).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('has every metric the Grafana dashboard in docs/ charts', async () => {
    const dashboard = await readFile(new URL('../../docs/grafana-dashboard.json', import.meta.url), 'utf8');
    const charted = new Set([...dashboard.matchAll(/switchboard_[a-z_]+/g)].map(([name]) => name.replace(/_bucket$/, '')));
    expect(charted.size).toBeGreaterThan(10);
    const text = await scrape();
    for (const name of charted) expect(text, name).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
  });
});
