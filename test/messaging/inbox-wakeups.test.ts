import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Tx } from '../../src/kernel/tx.js';
import { InProcessNotifier, type Notifier } from '../../src/kernel/notifier.js';
import { InboxWakeups, type Waiter } from '../../src/messaging/inbox-wakeups.js';

const logger = pino({ level: 'silent' });

/** Stands in for PostgreSQL's LISTEN/NOTIFY between the nodes of a cluster, in one process. */
class ClusterNotifier extends InProcessNotifier {
  override readonly spansNodes = true;
}

/** A cluster's notifier that records what it is asked to send and holds each notify until released. */
class HeldNotifier implements Notifier {
  readonly spansNodes = true;
  readonly epoch = 0;
  readonly transport = 'listening';
  readonly sent: string[] = [];
  private readonly local = new InProcessNotifier();
  private readonly held: (() => void)[] = [];

  async notify(channel: string, payload = ''): Promise<void> {
    this.sent.push(payload);
    await new Promise<void>((resolve) => this.held.push(resolve));
    await this.local.notify(channel, payload);
  }

  notifyIn(_tx: Tx, channel: string, payload = ''): Promise<void> {
    return this.notify(channel, payload);
  }

  listen(channel: string, handler: (payload: string) => void): () => void {
    return this.local.listen(channel, handler);
  }

  onResume(handler: () => void): () => void {
    return this.local.onResume(handler);
  }

  /** Lets the oldest pending notify complete, then lets the flush loop take its next turn. */
  async release(): Promise<void> {
    this.held.shift()?.();
    await new Promise((resolve) => setImmediate(resolve));
  }

  async close(): Promise<void> {
    await this.local.close();
  }
}

function sleeping(wakeups: InboxWakeups, inbox: string): { waiter: Waiter; woken: () => number } {
  const waiter = wakeups.register(inbox);
  let count = 0;
  waiter.wake = () => count++;
  return { waiter, woken: () => count };
}

describe('inbox wake-ups', () => {
  it('wakes one waiter per wake-up; a waiter leaving unclaimed or with a full batch passes it on', () => {
    const wakeups = new InboxWakeups(new InProcessNotifier(), logger);
    const first = sleeping(wakeups, 'a');
    const second = sleeping(wakeups, 'a');
    const third = sleeping(wakeups, 'a');

    wakeups.committed(['a']);
    expect([first.woken(), second.woken(), third.woken()]).toEqual([1, 0, 0]);

    // The first leaves without claiming (its request went away): the second gets the wake-up.
    wakeups.unregister(first.waiter, false);
    expect([second.woken(), third.woken()]).toEqual([1, 0]);

    // The second claims a partial batch: nothing more is waiting, nobody else is woken.
    wakeups.rearm(second.waiter);
    wakeups.unregister(second.waiter, false);
    expect(third.woken()).toBe(0);

    // A full batch may leave more behind: the next waiter looks.
    const fourth = sleeping(wakeups, 'a');
    wakeups.unregister(third.waiter, true);
    expect(fourth.woken()).toBe(1);
  });

  it('lets at most 32 long-poll claims start per turn of the event loop, the rest in later turns in order', async () => {
    const wakeups = new InboxWakeups(new InProcessNotifier(), logger);
    const started: number[] = [];
    const turns = Array.from({ length: 100 }, (_, i) => {
      const turn = wakeups.claimTurn();
      if (!turn) started.push(i);
      return turn?.then(() => started.push(i));
    });
    expect(started).toHaveLength(32);
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.resolve();
    expect(started).toHaveLength(64);
    await Promise.all(turns);
    expect(started).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // An idle turn later, a claim starts at once again.
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(wakeups.claimTurn()).toBeUndefined();
  });

  it('wakes waiters of another node through the notifier, and ignores its own notifications', async () => {
    const notifier = new ClusterNotifier();
    const here = new InboxWakeups(notifier, logger);
    const there = new InboxWakeups(notifier, logger);
    const local = sleeping(here, 'a');
    const remote = sleeping(there, 'a');

    here.committed(['a']);
    await new Promise((resolve) => setImmediate(resolve));
    // `here` woke its waiter directly and ignored its own notification when it came back.
    expect(local.woken()).toBe(1);
    expect(remote.woken()).toBe(1);
  });

  it('notifies nobody when no other process can hear (one SQLite server)', async () => {
    const notifier = new InProcessNotifier();
    const heard: string[] = [];
    notifier.listen('messaging:inboxes', (payload) => heard.push(payload));
    const wakeups = new InboxWakeups(notifier, logger);
    const local = sleeping(wakeups, 'a');

    wakeups.committed(['a', 'b']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(local.woken()).toBe(1);
    expect(heard).toEqual([]);
  });

  it('keeps at most one notify in flight and folds the inboxes touched meanwhile into the next', async () => {
    const notifier = new HeldNotifier();
    const wakeups = new InboxWakeups(notifier, logger);

    wakeups.committed(['a']);
    wakeups.committed(['b', 'c']);
    wakeups.committed(['b']);
    expect(notifier.sent.map((p) => JSON.parse(p).i)).toEqual([['a']]);

    await notifier.release();
    expect(notifier.sent.map((p) => JSON.parse(p).i)).toEqual([['a'], ['b', 'c']]);
    await notifier.release();
    expect(notifier.sent).toHaveLength(2);
  });

  it('splits a large set of inboxes into notifications under the payload cap', () => {
    const notifier = new HeldNotifier();
    const wakeups = new InboxWakeups(notifier, logger);
    const inboxes = Array.from({ length: 400 }, (_, i) => `agent-with-a-fairly-long-name-${i}`);

    void wakeups.inTransaction(undefined as never, inboxes);
    // The first payload is sent before the first await; it stays under the cap.
    expect(notifier.sent).toHaveLength(1);
    const first = JSON.parse(notifier.sent[0]!) as { n: string; i: string[] };
    expect(first.n).toBe('');
    expect(first.i.length).toBeLessThan(inboxes.length);
    expect(Buffer.byteLength(JSON.stringify({ c: 'messaging:inboxes', p: notifier.sent[0] }))).toBeLessThan(7900);
  });
});
