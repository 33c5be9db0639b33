import type { Clock } from '../kernel/clock.js';
import { autocommit } from '../kernel/tx.js';
import type { AgentPauses } from '../kernel/usage-ports.js';
import type { InboxWakeups, Waiter } from './inbox-wakeups.js';
import type { Leases } from './leases.js';
import type { Caller, Message } from './messages.js';
import type { MessagingStore } from './store.js';

/** A wake-up registration held over several receives (`InboxService.watch`). */
export interface InboxWatch {
  readonly waiter: Waiter;
  /** The last receive took less than it asked for: the inbox had nothing more visible. */
  drained: boolean;
  /** The last receive's claim leased messages (see `waitAndClaim`: no next-visible lookup follows it). */
  leased: boolean;
}

/** What a receive works with: the inbox's wake-ups, leases and store. */
export interface ReceiveParts {
  wakeups: InboxWakeups;
  leases: Leases;
  store: MessagingStore;
  clock: Clock;
  /** Budgets' pauses (null: nothing pauses agents). */
  pauses: AgentPauses | null;
}

/**
 * A receive: claims what is visible now, else waits (up to `waitSeconds`) for a wake-up, the
 * next delayed message's time or the end, and claims again. The long poll of HTTP receive and
 * the agent channel's push loop (which holds its registration over receives: `watch`).
 */
export async function waitAndClaim(
  parts: ReceiveParts,
  caller: Caller,
  agentId: string,
  options: { waitSeconds: number; max: number; visibilitySeconds: number },
  signal: AbortSignal,
  watch?: InboxWatch,
): Promise<Message[]> {
  const deadline = parts.clock.now() + options.waitSeconds * 1000;
  // Registered before the first look, so a send between the look and the wait is not missed.
  const waiter = watch?.waiter ?? parts.wakeups.register(agentId);
  let full = false;
  // An inbox the watch's last receive drained has nothing new unless a wake-up came since.
  let look = !(watch?.drained === true && !waiter.notified);
  // Nor is the next-visible lookup asked after a claim that leased messages: it found the leases
  // just taken and messages delayed from before, and the reaper wakes the inbox when those come
  // due (within its 250 ms pass), as it does for every lease run out or backoff ended. A channel
  // paid that lookup for each message pushed (W1 on PostgreSQL: 0.7 statements per message).
  let ask = look || watch?.leased !== true;
  try {
    for (;;) {
      let paused = false;
      if (look) {
        const turn = parts.wakeups.claimTurn();
        if (turn) await turn;
        // A client gone while its poll waited for a turn gets nothing leased to it.
        if (signal.aborted) return [];
        parts.wakeups.rearm(waiter);
        // A paused agent is leased nothing: its messages wait, so none of them dead-letters, until
        // it resumes (a wake-up) or the poll ends.
        paused = parts.pauses !== null && (await parts.pauses.pauses(autocommit)).agent(agentId);
        const messages = paused ? [] : await parts.leases.claim(agentId, caller.actor, options.max, options.visibilitySeconds);
        full = messages.length === options.max;
        if (watch) {
          watch.drained = !full;
          watch.leased = messages.length > 0;
        }
        if (messages.length > 0 || parts.clock.now() >= deadline || signal.aborted) return messages;
        if (waiter.notified) continue;
      }
      look = true;
      const now = parts.clock.now();
      if (now >= deadline || signal.aborted) return [];
      const nextVisible = paused || !ask ? null : await parts.store.nextVisibleAt(autocommit, agentId, now);
      ask = true;
      const until = Math.min(deadline, nextVisible ?? deadline);
      await new Promise<void>((resolve) => {
        let settled = false;
        const done = () => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          waiter.wake = null;
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, until - now));
        signal.addEventListener('abort', done, { once: true });
        // Woken after the commit of a write group (db/sqlite-driver.ts on SQLite), which holds
        // every send of its turn: the claim that follows at once takes them all.
        waiter.wake = done;
        // The client may have gone, or a send arrived, while nextVisibleAt was awaited: an abort
        // fired before the listener was added is never heard again.
        if (waiter.notified || signal.aborted) done();
      });
    }
  } finally {
    // A watch stays registered (its owner ends it); a full batch passes the wake-up on, as leaving would.
    if (!watch) parts.wakeups.unregister(waiter, full);
    else if (full) parts.wakeups.passOn(waiter);
  }
}
