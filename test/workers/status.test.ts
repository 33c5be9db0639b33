import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

interface WorkerEntry {
  name: string;
  runs: number;
  failures: number;
  consecutive_failures: number;
  last_run_at: string | null;
  last_duration_ms: number | null;
  running_since: string | null;
  last_error: { message: string; at: string } | null;
}

/** Every worker of a node, in the order they start (and stop in reverse). */
const WORKERS = [
  'postponed-writes',
  'cluster-heartbeat',
  'credential-watch',
  'message-reaper',
  'discovery-index',
  'agent-health',
  'routine-scheduler',
  'run-timer',
  'artifact-upload-sweeper',
  'artifact-orphan-blob-sweeper',
  'webhook-fan-out',
  'webhook-delivery',
  'alert-evaluator',
  'retention',
  'audit-denials',
  'audit-retention',
];

/** The value of one series of the exposition text (NaN when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? Number.NaN : Number(line.slice(series.length + 1));
}

describeEachDialect('worker status', (dialect) => {
  // The delivery worker looks for due deliveries every 50 ms: a failure shows within a few.
  const server = useServer(dialect, { env: { SWITCHBOARD_WEBHOOK_POLL_MS: '50' } });

  async function workers(): Promise<WorkerEntry[]> {
    const res = await server.api.get('/api/v1/cluster/nodes');
    expect(res.status).toBe(200);
    const self = (res.body.data as { pid: number; status: string; workers?: WorkerEntry[] }[]).find((node) => node.workers !== undefined);
    expect(self).toMatchObject({ pid: process.pid, status: 'up' });
    return self!.workers!;
  }

  const worker = async (name: string) => (await workers()).find((entry) => entry.name === name)!;

  it("lists the answering node's workers in start order, each with its passes, the last one's start and duration", async () => {
    // Every worker makes its first pass within 100 ms of the start.
    const listed = await waitFor(async () => {
      const all = await workers();
      return all.every((entry) => entry.runs > 0) ? all : undefined;
    });
    expect(listed.map((entry) => entry.name)).toEqual(WORKERS);
    for (const entry of listed) {
      expect(entry, entry.name).toMatchObject({ failures: 0, consecutive_failures: 0, last_error: null });
      expect(Date.parse(entry.last_run_at!), entry.name).toBeGreaterThan(Date.now() - 60_000);
      expect(entry.last_duration_ms, entry.name).toBeGreaterThanOrEqual(0);
    }
    // The reaper runs every 250 ms: its count moves on.
    const reaper = listed.find((entry) => entry.name === 'message-reaper')!;
    await waitFor(async () => (await worker('message-reaper')).runs > reaper.runs, 5000, 50);

    const metrics = (await server.api.get('/metrics')).text;
    expect(metrics).toContain('# TYPE switchboard_worker_runs_total counter');
    expect(metrics).toContain('# TYPE switchboard_worker_run_seconds_total counter');
    expect(metrics).toContain('# TYPE switchboard_worker_last_run_duration_seconds gauge');
    for (const name of WORKERS) {
      expect(sample(metrics, `switchboard_worker_runs_total{worker="${name}",outcome="ok"}`), name).toBeGreaterThan(0);
      expect(sample(metrics, `switchboard_worker_runs_total{worker="${name}",outcome="failed"}`), name).toBe(0);
      expect(sample(metrics, `switchboard_worker_run_seconds_total{worker="${name}"}`), name).toBeGreaterThanOrEqual(0);
      expect(sample(metrics, `switchboard_worker_last_run_duration_seconds{worker="${name}"}`), name).toBeGreaterThanOrEqual(0);
    }
    expect((await server.api.get('/readyz', { key: null })).body).toMatchObject({ status: 'ready', checks: { workers: 'up' } });
  });

  it('shows a worker whose passes fail: its error in the nodes answer, its name in /readyz, its failures in /metrics; then its recovery', async () => {
    const db = server.app.platform.database.db;
    // The delivery worker's table goes away: its passes fail for real, the rest of the node goes on.
    await sql`alter table webhook_deliveries rename to webhook_deliveries_away`.execute(db);
    let failing: WorkerEntry;
    try {
      failing = await waitFor(async () => {
        const entry = await worker('webhook-delivery');
        return entry.consecutive_failures >= 3 ? entry : undefined;
      });
      expect(failing.failures).toBeGreaterThanOrEqual(3);
      expect(failing.last_error?.message).toMatch(/webhook_deliveries/);
      expect(Date.parse(failing.last_error!.at)).toBeGreaterThanOrEqual(Date.parse(failing.last_run_at!));

      const ready = await server.api.get('/readyz', { key: null });
      // Still serving: one worker failing takes no request away from the node.
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'ready', checks: { workers: 'failing' }, failing_workers: ['webhook-delivery'] });
      expect(ready.text).not.toMatch(/webhook_deliveries/);

      const metrics = (await server.api.get('/metrics')).text;
      expect(sample(metrics, 'switchboard_worker_runs_total{worker="webhook-delivery",outcome="failed"}')).toBeGreaterThanOrEqual(3);
      expect(sample(metrics, 'switchboard_worker_runs_total{worker="webhook-fan-out",outcome="failed"}')).toBe(0);
    } finally {
      await sql`alter table webhook_deliveries_away rename to webhook_deliveries`.execute(db);
    }

    const recovered = await waitFor(async () => {
      const entry = await worker('webhook-delivery');
      return entry.consecutive_failures === 0 ? entry : undefined;
    });
    // The error stays on record, with the count of failed passes.
    expect(recovered.failures).toBeGreaterThanOrEqual(failing.failures);
    expect(recovered.last_error?.message).toMatch(/webhook_deliveries/);
    expect(Date.parse(recovered.last_run_at!)).toBeGreaterThan(Date.parse(recovered.last_error!.at));
    const ready = await server.api.get('/readyz', { key: null });
    expect(ready.body).toMatchObject({ status: 'ready', checks: { workers: 'up' } });
    expect(ready.body.failing_workers).toBeUndefined();
  });
});
