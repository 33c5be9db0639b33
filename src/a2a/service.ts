import { randomUUID } from 'node:crypto';
import { autocommit } from '../kernel/tx.js';
import type { Clock } from '../kernel/clock.js';
import { Conflict, Forbidden, NotFound } from '../kernel/errors.js';
import type { Notifier } from '../kernel/notifier.js';
import type { AgentDirectory, Inbox, MessageOutcome, OutcomeHandler } from '../kernel/ports.js';
import { FINAL_STATES, type A2aStore, type A2aTaskRow } from './store.js';
import type { A2aTaskState } from './tables.js';

/** Announces that a task's state changed (payload: the task id), at the commit that changed it. */
export const A2A_TASK_CHANGED = 'a2a:task';
/** The event name of the inbox messages that A2A sends put there. */
export const A2A_EVENT_NAME = 'a2a.message';
/**
 * A watch re-reads its task this often even without a notice: notices are latency hints
 * (kernel/notifier.ts), and one lost must not leave a stream waiting for ever.
 */
const RECHECK_MS = 5_000;

/** Who calls, as A2A sees it: agents act only as themselves. */
export interface A2aCaller {
  actor: string;
  agentId: string | null;
  admin: boolean;
}

/** A registered capability of an agent, as its card shows it. */
export interface AgentSkillSource {
  id: string;
  capability: string;
  metadata: Record<string, unknown>;
  groups: string[];
}

/** Discovery, as A2A needs it: an agent's capabilities (none: not registered), and every capability offered. */
export interface AgentCapabilities {
  capabilitiesOf(agentId: string): Promise<AgentSkillSource[]>;
  /** The distinct capabilities registered (by name, each with a description when one of its agents gave one), at most `limit`. */
  offered(limit: number): Promise<{ capability: string; description: string | null }[]>;
}

/** How a message to the server's own endpoint names where it goes: a skill, else its text is searched. */
export interface RouteRequest {
  skill: string | null;
  strategy: string | undefined;
  text: string;
}

/** The server's card lists at most this many skills (capabilities). */
export const MAX_CARD_SKILLS = 500;
/** A free-text message is matched against this many capabilities, best first, before giving up. */
const SEARCH_CANDIDATES = 5;

export function isFinal(state: A2aTaskState): boolean {
  return FINAL_STATES.includes(state);
}

/**
 * A2A tasks over agent inboxes: an A2A message sent to an agent becomes one message
 * in its inbox (origin `a2a_task`), and the task follows it: submitted while it waits, working
 * once delivered, completed when acknowledged (the ack's output is the result), failed when
 * dead-lettered, canceled when withdrawn by CancelTask. The task row moves in the transaction
 * that settles the message (the outcome handler), so the two never disagree.
 */
export class A2aService {
  /** Watches waiting on this node, by task id. */
  private readonly watchers = new Map<string, Set<() => void>>();

  constructor(
    private readonly deps: {
      store: A2aStore;
      inbox: Inbox;
      agents: AgentCapabilities;
      directory: AgentDirectory;
      clock: Clock;
      notifier: Notifier;
    },
  ) {
    const wake = (taskId: string) => this.watchers.get(taskId)?.forEach((w) => w());
    deps.notifier.listen(A2A_TASK_CHANGED, wake);
    // Notices may have been lost: every watch looks again.
    deps.notifier.onResume(() => this.watchers.forEach((set) => set.forEach((w) => w())));
  }

  /** The capabilities of a registered agent; NotFound for an agent discovery does not know. */
  async agent(agentId: string): Promise<AgentSkillSource[]> {
    const capabilities = await this.deps.agents.capabilitiesOf(agentId);
    if (capabilities.length === 0) throw new NotFound('Agent', agentId);
    return capabilities;
  }

  /** What the server's own card offers: every registered capability. */
  offered(): Promise<{ capability: string; description: string | null }[]> {
    return this.deps.agents.offered(MAX_CARD_SKILLS);
  }

  /**
   * The agent a message to the server's own endpoint goes to: the healthy agent discovery picks
   * (with the strategy asked, else its default) for the requested skill, or, without one, for the
   * best of the capabilities a search over the message's text finds that a healthy agent offers.
   */
  async route(request: RouteRequest): Promise<string> {
    const candidates =
      request.skill !== null
        ? [request.skill]
        : [
            ...new Set(
              (await this.deps.directory.search({ query: request.text, top_k: SEARCH_CANDIDATES })).map((hit) => hit.capability.name),
            ),
          ];
    for (const capability of candidates) {
      const [best] = await this.deps.directory.lookup(autocommit, { capability, strategy: request.strategy, limit: 1 });
      if (best) return best.agent_id;
    }
    throw new NotFound(
      request.skill !== null ? `A healthy agent with skill '${request.skill}'` : 'A healthy agent whose capabilities match the message',
    );
  }

  /** Puts an A2A message in the agent's inbox as a new task (source: the caller). */
  async send(caller: A2aCaller, agentId: string, input: { contextId: string | null; message: unknown }): Promise<A2aTaskRow> {
    await this.agent(agentId);
    const now = this.deps.clock.now();
    // A2A's ids are the client's to reuse (a context) and commonly UUIDs.
    const id = randomUUID();
    const contextId = input.contextId ?? randomUUID();
    return this.deps.store.inTransaction(async (tx) => {
      const sent = await this.deps.inbox.send({
        tx,
        messages: [
          {
            source: caller.agentId ?? caller.actor,
            destination: agentId,
            event_name: A2A_EVENT_NAME,
            payload: { task_id: id, context_id: contextId, message: input.message },
            origin: { kind: 'a2a_task', ref: id },
          },
        ],
      });
      const row: A2aTaskRow = {
        id,
        context_id: contextId,
        agent_id: agentId,
        message_id: sent.messages[0]!.message_id,
        requester: caller.agentId ?? caller.actor,
        request: JSON.stringify(input.message),
        state: 'submitted',
        output: null,
        reason: null,
        created_at: now,
        updated_at: now,
      };
      await this.deps.store.insertTask(tx, row);
      return row;
    });
  }

  /**
   * A task reached through its agent's URL (or the server's). Its requester, its agent and admins see it; to
   * anyone else it does not exist (NotFound, so ids of others' tasks reveal nothing).
   */
  async get(caller: A2aCaller, agentId: string | null, taskId: string): Promise<A2aTaskRow> {
    const row = await this.deps.store.findTask(autocommit, taskId);
    // Through the server's own endpoint (agentId null) a task of any agent is reached.
    if (!row || (agentId !== null && row.agent_id !== agentId) || !this.sees(caller, row)) throw new NotFound('Task', taskId);
    return row;
  }

  private sees(caller: A2aCaller, row: A2aTaskRow): boolean {
    if (caller.admin) return true;
    return caller.agentId !== null && (caller.agentId === row.requester || caller.agentId === row.agent_id);
  }

  /**
   * Withdraws the task's message from the inbox (messaging's cancel: state `cancelled`, so a
   * later acknowledge by the agent is refused) and marks the task canceled, in one transaction.
   * Only its requester or an admin may; a settled task is a Conflict (A2A: not cancelable).
   */
  async cancel(caller: A2aCaller, agentId: string | null, taskId: string): Promise<A2aTaskRow> {
    const row = await this.get(caller, agentId, taskId);
    if (!caller.admin && caller.agentId !== row.requester) {
      throw new Forbidden(`Only the requester of task '${taskId}' or an admin may cancel it`);
    }
    const now = this.deps.clock.now();
    const reason = `canceled by ${caller.actor}`;
    return this.deps.store.inTransaction(async (tx) => {
      await this.deps.inbox.cancel(tx, row.message_id, reason);
      const moved = await this.deps.store.moveTasks(tx, [taskId], ['submitted', 'working'], { state: 'canceled', reason, updated_at: now });
      // Settled meanwhile (acknowledged, dead-lettered): throwing rolls the withdrawal back too.
      if (moved.length === 0) throw new Conflict(`Task '${taskId}' is already settled and cannot be canceled`);
      await this.deps.notifier.notifyIn(tx, A2A_TASK_CHANGED, taskId);
      return { ...row, state: 'canceled' as const, reason, updated_at: now };
    });
  }

  /**
   * The task now, then each time its state changes, until it is final or `signal` aborts.
   * Woken by the notice of the transaction that moved it (any node), with a slow re-read as
   * the fallback; never a tight poll.
   */
  async *watch(caller: A2aCaller, agentId: string | null, taskId: string, signal: AbortSignal): AsyncGenerator<A2aTaskRow> {
    let wake: (() => void) | null = null;
    let woken = false;
    const waiter = () => {
      woken = true;
      wake?.();
    };
    // Registered before the first read, so a change between the read and the wait is not missed.
    let set = this.watchers.get(taskId);
    if (!set) this.watchers.set(taskId, (set = new Set()));
    set.add(waiter);
    try {
      let row = await this.get(caller, agentId, taskId);
      yield row;
      while (!isFinal(row.state) && !signal.aborted) {
        if (!woken) {
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              signal.removeEventListener('abort', done);
              wake = null;
              resolve();
            };
            const timer = setTimeout(done, RECHECK_MS);
            signal.addEventListener('abort', done, { once: true });
            wake = done;
          });
        }
        woken = false;
        // Ended (the client left, its key was revoked): nothing more is told, not even a change seen now.
        if (signal.aborted) break;
        const next = await this.deps.store.findTask(autocommit, taskId);
        if (next && next.state !== row.state) {
          row = next;
          yield row;
        }
      }
    } finally {
      set.delete(waiter);
      if (set.size === 0) this.watchers.delete(taskId);
    }
  }

  /**
   * Hears of the task messages' outcomes inside the transaction that settles them
   * (kernel/ports.ts `OutcomeHandlers.a2a_task`) and moves their tasks with them.
   */
  readonly outcomeHandler: OutcomeHandler = {
    delivered: true,
    handle: async (tx, outcomes) => {
      const now = this.deps.clock.now();
      for (const outcome of outcomes) {
        const moved = await this.deps.store.moveTasks(tx, [outcome.origin.ref], ...transition(outcome, now));
        for (const id of moved) await this.deps.notifier.notifyIn(tx, A2A_TASK_CHANGED, id);
      }
    },
  };
}

/** The task move an outcome of its message makes: from which states, to what. */
function transition(
  outcome: MessageOutcome,
  now: number,
): [readonly A2aTaskState[], { state: A2aTaskState; output?: string | null; reason?: string | null; updated_at: number }] {
  switch (outcome.status) {
    case 'delivered':
      return [['submitted'], { state: 'working', updated_at: now }];
    case 'acknowledged':
      return [
        ['submitted', 'working'],
        { state: 'completed', output: outcome.output === undefined ? null : JSON.stringify(outcome.output), updated_at: now },
      ];
    case 'dead_lettered':
      return [['submitted', 'working'], { state: 'failed', reason: outcome.reason ?? 'dead-lettered', updated_at: now }];
  }
}
