import type { Tx } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import type { Notifier } from '../kernel/notifier.js';
import type { EventLog, NewEvent } from '../kernel/ports.js';
import type { EventsStore, NewEventRow } from './store.js';

/** Notices on this channel tell streams (on every node) that events were appended. */
export const EVENTS_APPENDED = 'events:appended';

/** The EventLog port: writes events in the caller's transaction and wakes the streams at its commit. */
export class EventAppender implements EventLog {
  constructor(private readonly deps: { store: EventsStore; clock: Clock; notifier: Notifier }) {}

  async append(tx: Tx, ...events: NewEvent[]): Promise<void> {
    if (events.length === 0) return;
    const now = this.deps.clock.now();
    const rows = events.map((event): NewEventRow => ({
      type: event.type,
      subject: event.subject,
      actor: event.actor,
      data: JSON.stringify(event.data),
      reason: event.reason ?? null,
      readers: event.readers
        ? JSON.stringify([...event.readers.agents.map((a) => `agent:${a}`), ...(event.readers.groups ?? []).map((g) => `group:${g}`)])
        : null,
      created_at: now,
    }));
    await this.deps.store.append(tx, rows);
    await this.deps.notifier.notifyIn(tx, EVENTS_APPENDED);
  }
}
