import { vi } from 'vitest';
import { MessagingStore } from '../../src/messaging/store.js';
import { within } from './wait.js';

/**
 * Resolves once a long poll on `agentId`'s inbox, on a server in this process, has looked,
 * found nothing and is waiting: the last database read before its wait (the next-visible
 * lookup) has answered. Call it before starting the poll. For tests that take the database
 * away under a waiting poll: one cut during its look answers 503, as any request would.
 */
export async function longPollWaiting(agentId: string, timeoutMs = 10_000): Promise<void> {
  const nextVisibleAt = MessagingStore.prototype.nextVisibleAt;
  const spy = vi.spyOn(MessagingStore.prototype, 'nextVisibleAt');
  const waiting = new Promise<void>((resolve) => {
    spy.mockImplementation(async function (this: MessagingStore, tx, destination, now) {
      const next = await nextVisibleAt.call(this, tx, destination, now);
      // Once the poll's continuation, queued before this one, has started its wait.
      if (destination === agentId) setImmediate(resolve);
      return next;
    });
  });
  try {
    await within(waiting, timeoutMs, `a long poll on ${agentId} to wait`);
  } finally {
    spy.mockRestore();
  }
}
