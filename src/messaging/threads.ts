import { autocommit, type Tx } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { PayloadRefs } from './payload-refs.js';
import { toMessage, type Caller, type Message } from './messages.js';
import type { SessionRow, ThreadRow } from './store.js';
import type { ThreadsStore } from './threads-store.js';

export interface Session {
  id: string;
  name: string;
  metadata: Record<string, unknown>;
  created_by: string;
  created_at: string;
}

export interface Thread {
  id: string;
  session_id: string;
  name: string;
  mode: 'wild' | 'turn';
  participants: string[];
  next_speaker: string | null;
  created_by: string;
  created_at: string;
}

function toSession(row: SessionRow): Session {
  return {
    id: row.id,
    name: row.name,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    created_by: row.created_by,
    created_at: iso(row.created_at),
  };
}

function toThread(row: ThreadRow): Thread {
  const participants = JSON.parse(row.participants) as string[];
  return {
    id: row.id,
    session_id: row.session_id,
    name: row.name,
    mode: row.mode,
    participants,
    next_speaker: row.mode === 'turn' ? participants[row.turn % participants.length]! : null,
    created_by: row.created_by,
    created_at: iso(row.created_at),
  };
}

/**
 * Sessions and their threads: a thread's participants, and in turn mode the round
 * robin that a send to the thread takes part in (`takeTurn`, called by the inbox).
 */
export class ThreadsService {
  constructor(private readonly deps: { store: ThreadsStore; clock: Clock; payloads: PayloadRefs }) {}

  private get store() {
    return this.deps.store;
  }

  async createSession(caller: Caller, input: { name: string; metadata?: Record<string, unknown> }): Promise<Session> {
    const now = this.deps.clock.now();
    const row: SessionRow = {
      id: newId('ses', now),
      name: input.name,
      metadata: JSON.stringify(input.metadata ?? {}),
      created_by: caller.actor,
      created_at: now,
    };
    await this.store.insertSession(autocommit, row);
    return toSession(row);
  }

  async getSession(id: string): Promise<Session> {
    const row = await this.store.findSession(autocommit, id);
    if (!row) throw new NotFound('Session', id);
    return toSession(row);
  }

  async listSessions(window: Page): Promise<Paged<Session>> {
    const page = await this.store.listSessions(autocommit, window);
    return mapPage(page, toSession);
  }

  async createThread(
    caller: Caller,
    input: { session_id: string; name: string; mode?: 'wild' | 'turn'; participants: string[] },
  ): Promise<Thread> {
    await this.getSession(input.session_id);
    if (new Set(input.participants).size !== input.participants.length) {
      throw InvalidRequest.field('participants', 'must not repeat an agent');
    }
    const now = this.deps.clock.now();
    const row: ThreadRow = {
      id: newId('thr', now),
      session_id: input.session_id,
      name: input.name,
      mode: input.mode ?? 'wild',
      participants: JSON.stringify(input.participants),
      turn: 0,
      created_by: caller.actor,
      created_at: now,
    };
    await this.store.insertThread(autocommit, row);
    return toThread(row);
  }

  private async readableThread(caller: Caller, id: string): Promise<ThreadRow> {
    const row = await this.store.findThread(autocommit, id);
    if (!row) throw new NotFound('Thread', id);
    const participants = JSON.parse(row.participants) as string[];
    if (!caller.admin && (caller.agentId === null || !participants.includes(caller.agentId))) {
      throw new Forbidden(`Only participants of thread '${id}' may read it`);
    }
    return row;
  }

  async getThread(caller: Caller, id: string): Promise<Thread> {
    return toThread(await this.readableThread(caller, id));
  }

  async threadMessages(caller: Caller, id: string, window: Page): Promise<Paged<Message>> {
    await this.readableThread(caller, id);
    const page = mapPage(await this.store.threadMessages(autocommit, id, window), toMessage);
    return { ...page, items: await this.deps.payloads.sign(page.items) };
  }

  /** Thread rules, inside the send's transaction: participants only; in turn mode, round robin in list order. */
  async takeTurn(tx: Tx, threadId: string, sender: string, destination: string): Promise<void> {
    const thread = await this.store.findThread(tx, threadId);
    if (!thread) throw new NotFound('Thread', threadId);
    const participants = JSON.parse(thread.participants) as string[];
    if (!participants.includes(sender)) throw new Forbidden(`'${sender}' is not a participant of thread '${threadId}'`);
    if (!participants.includes(destination)) {
      throw InvalidRequest.field('destination', `'${destination}' is not a participant of thread '${threadId}'`);
    }
    if (thread.mode !== 'turn') return;
    const expected = participants[thread.turn % participants.length]!;
    if (expected !== sender) throw new Conflict(`It is '${expected}''s turn in thread '${threadId}', not '${sender}''s`);
    if (!(await this.store.advanceTurn(tx, threadId, thread.turn))) {
      throw new Conflict(`Another message took this turn in thread '${threadId}'; fetch the thread and retry`);
    }
  }
}
