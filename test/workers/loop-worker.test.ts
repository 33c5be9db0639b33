import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { installWorkerMetrics } from '../../src/http/plugins/metrics.js';
import { InProcessNotifier } from '../../src/kernel/notifier.js';
import { LoopWorker, type LoopWorkerOptions } from '../../src/workers/loop-worker.js';
import type { Worker } from '../../src/workers/worker.js';
import { FAILING_AFTER, Workers } from '../../src/workers/workers.js';
import { waitFor } from '../helpers/wait.js';

const CHANNEL = 'test.changed';

describe('LoopWorker wakeOn', () => {
  const notifier = new InProcessNotifier();
  const events: string[] = [];
  // Sleeps far longer than any test: only a notice can start a second pass.
  const worker = new LoopWorker({
    name: 'test-worker',
    intervalMs: 600_000,
    logger: pino({ level: 'silent' }),
    wakeOn: { notifier, channel: CHANNEL, onNotice: () => events.push('notice') },
    run: async () => {
      events.push('run');
    },
  });
  afterEach(async () => {
    await worker.stop();
    await notifier.close();
  });

  it('listens only while it runs: a notice runs onNotice, then a pass; stop unlistens', async () => {
    await notifier.notify(CHANNEL);
    worker.start();
    await waitFor(() => events.length === 1);
    expect(events).toEqual(['run']);

    await notifier.notify('other.channel');
    await notifier.notify(CHANNEL);
    await waitFor(() => events.length === 3);
    expect(events).toEqual(['run', 'notice', 'run']);

    await worker.stop();
    await notifier.notify(CHANNEL);
    expect(events).toEqual(['run', 'notice', 'run']);
  });
});

const silent = pino({ level: 'silent' });

/** A worker of these tests, logging nothing. */
function loopWorker(name: string, intervalMs: number, run: LoopWorkerOptions['run']): LoopWorker {
  return new LoopWorker({ name, intervalMs, logger: silent, run });
}

describe('LoopWorker status', () => {
  it('counts passes and failures, keeps the last error after a pass succeeds, and times each pass', async () => {
    let pass = 0;
    const worker = loopWorker('flaky', 1, async () => {
      pass += 1;
      if (pass <= 2) throw new Error(`boom ${pass}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    });
    expect(worker.status()).toEqual({
      name: 'flaky',
      runs: 0,
      failures: 0,
      consecutiveFailures: 0,
      lastRun: null,
      runningSince: null,
      lastError: null,
      busySeconds: 0,
    });
    const before = Date.now();
    worker.start();
    try {
      await waitFor(() => worker.status().consecutiveFailures === 2);
      expect(worker.status()).toMatchObject({ runs: 2, failures: 2, lastError: { message: 'boom 2' } });
      await waitFor(() => worker.status().runs >= 3);
    } finally {
      await worker.stop();
    }
    const status = worker.status();
    expect(status).toMatchObject({ failures: 2, consecutiveFailures: 0, lastError: { message: 'boom 2' }, runningSince: null });
    expect(status.lastError!.at).toBeGreaterThanOrEqual(before);
    expect(status.lastRun!.startedAt).toBeGreaterThanOrEqual(status.lastError!.at);
    expect(status.lastRun!.durationMs).toBeGreaterThanOrEqual(15);
    expect(status.busySeconds).toBeGreaterThanOrEqual(status.lastRun!.durationMs / 1000);
  });

  it('shows a pass under way; one that a stop cuts short is neither a run nor a failure', async () => {
    let started = false;
    const worker = loopWorker(
      'slow',
      600_000,
      (signal) =>
        new Promise<void>((_resolve, reject) => {
          started = true;
          signal.addEventListener('abort', () => reject(new Error('stopped')));
        }),
    );
    worker.start();
    await waitFor(() => started);
    expect(worker.status().runningSince).toBeGreaterThan(Date.now() - 5000);
    await worker.stop();
    expect(worker.status()).toMatchObject({ runs: 0, failures: 0, runningSince: null, lastError: null });
  });

  it('names the causes of an error that has no message of its own (a refused connection to every address)', async () => {
    const refused = new AggregateError([new Error('connect ECONNREFUSED ::1:5432'), new Error('connect ECONNREFUSED 127.0.0.1:5432')]);
    const worker = loopWorker('refused', 600_000, () => Promise.reject(refused));
    worker.start();
    await waitFor(() => worker.status().failures === 1);
    await worker.stop();
    expect(worker.status().lastError?.message).toBe('connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432');
  });
});

describe('Workers', () => {
  it('starts workers in order and stops them in reverse; names are unique, and all are added before the start', async () => {
    const order: string[] = [];
    const recorder = (name: string): Worker => {
      const inner = loopWorker(name, 600_000, async () => undefined);
      return {
        name,
        start: () => (order.push(`start ${name}`), inner.start()),
        stop: async () => (order.push(`stop ${name}`), inner.stop()),
        status: () => inner.status(),
      };
    };
    const workers = new Workers();
    workers.add(recorder('a'), recorder('b'));
    workers.add(recorder('c'));
    expect(() => workers.add(recorder('b'))).toThrow(/two workers are named b/);
    workers.start();
    expect(() => workers.add(recorder('d'))).toThrow(/before they start/);
    await workers.stop();
    expect(order).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
    expect(workers.statuses().map((status) => status.name)).toEqual(['a', 'b', 'c']);
  });

  it('names a worker failing after FAILING_AFTER passes in a row, and /metrics counts its passes by outcome', async () => {
    let calls = 0;
    const failing = loopWorker('failing', 1, async () => {
      calls += 1;
      throw new Error('the table is gone');
    });
    const steady = loopWorker('steady', 1, async () => undefined);
    const workers = new Workers();
    workers.add(steady, failing);
    const registry = new Registry();
    installWorkerMetrics(registry, workers);
    expect(workers.failing()).toEqual([]);
    workers.start();
    try {
      await waitFor(() => calls >= FAILING_AFTER && steady.status().runs > 0);
      expect(workers.failing()).toEqual(['failing']);
    } finally {
      await workers.stop();
    }
    const text = await registry.metrics();
    const [failed, steadyOk] = [failing.status(), steady.status()];
    expect(text).toContain(`switchboard_worker_runs_total{worker="failing",outcome="failed"} ${failed.failures}\n`);
    expect(text).toContain('switchboard_worker_runs_total{worker="failing",outcome="ok"} 0\n');
    expect(text).toContain(`switchboard_worker_runs_total{worker="steady",outcome="ok"} ${steadyOk.runs}\n`);
    expect(text).toContain(`switchboard_worker_run_seconds_total{worker="steady"} ${steadyOk.busySeconds}\n`);
    expect(text).toContain(`switchboard_worker_last_run_duration_seconds{worker="failing"} ${failed.lastRun!.durationMs / 1000}\n`);
  });
});
