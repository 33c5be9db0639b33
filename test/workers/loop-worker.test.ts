import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InProcessNotifier } from '../../src/kernel/notifier.js';
import { LoopWorker } from '../../src/workers/loop-worker.js';
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
