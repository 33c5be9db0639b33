import { assertMayChange, type Principal } from '../auth/index.js';
import type { Logger } from 'pino';
import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import { newId, newSecret } from '../kernel/ids.js';
import { sha256Hex } from '../kernel/sha256.js';
import type { DomainMetrics } from '../kernel/metrics.js';
import type { Notifier } from '../kernel/notifier.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import { SYSTEM_ACTOR, type AuditTrail, type EventLog, type Inbox, type MessageOutcome, type NewEvent } from '../kernel/ports.js';
import { autocommit, type Tx } from '../kernel/tx.js';
import { decideSlots, Schedule } from '../kernel/cron.js';
import { fireSpan, nextRunAt, validateSchedule } from './schedule.js';
import type { CreateRoutineBody, Execution, Fire, Routine, UpdateRoutineBody } from './schemas.js';
import { executionFinished, fireRow, outputJson, toExecution, toFire, toRoutine } from './views.js';
import type { ExecutionRow, FireRow, RoutineFilter, RoutineRow, RoutinesStore } from './store.js';
import type { ExecutionStatus, ExecutionTrigger } from './tables.js';
import { burstRow, type Debounce, type DebounceStore } from '../debounce/store.js';
import { render } from '../coordination/templates.js';

export const ROUTINE_EVENT = 'routine.execute';
/** Wakes every node's scheduler when routines change (a new earliest due time, a pause). */
export const ROUTINES_CHANGED = 'routines:changed';
const PLATFORM_SENDER = 'switchboard';
const FIRE_BATCH = 2000;

/** A webhook routine found by its token; what `invokeWebhook` fires. */
export type WebhookRoutine = RoutineRow;

export interface RoutinesDeps {
  store: RoutinesStore;
  /** Bursts of debounced webhook calls. */
  debounces: DebounceStore;
  clock: Clock;
  notifier: Notifier;
  inbox: Inbox;
  publicUrl: () => string;
  logger: Logger;
  /** routine.paused/resumed/triggered and routine.execution.succeeded/failed. */
  events: EventLog;
  metrics: DomainMetrics;
  audit: AuditTrail;
  /** Routines claimed per fire transaction (default 2,000). */
  fireBatchSize?: number;
}

/**
 * Routines: CRUD, the cron scheduler with its fire ledger, manual and webhook runs, and the
 * executions whose fate the target agent decides through its inbox (acknowledged: success with
 * its output; dead-lettered: failed with the reason).
 */
export class RoutinesService {
  private readonly fireBatchSize: number;

  constructor(private readonly deps: RoutinesDeps) {
    this.fireBatchSize = deps.fireBatchSize ?? FIRE_BATCH;
  }

  private get store() {
    return this.deps.store;
  }

  private webhookUrl(token: string): string {
    return `${this.deps.publicUrl()}/core/api/v1/routines/webhook/${token}`;
  }

  private async changed(): Promise<void> {
    await this.deps.notifier.notify(ROUTINES_CHANGED);
  }

  async create(input: CreateRoutineBody, actor: string): Promise<Routine> {
    const now = this.deps.clock.now();
    const token = input.trigger_type === 'webhook' ? newSecret() : null;
    const row: RoutineRow = {
      id: newId('rtn', now),
      name: input.name,
      description: input.description ?? null,
      trigger_type: input.trigger_type,
      cron_expression: input.cron_expression ?? null,
      timezone: input.timezone ?? 'UTC',
      target_agent: input.target_agent,
      payload: JSON.stringify(input.payload ?? {}),
      enabled: input.enabled === false ? 0 : 1,
      catch_up: input.catch_up ?? 'latest',
      overlap: input.overlap ?? 'allow',
      timeout_seconds: input.timeout_seconds ?? 3600,
      debounce: input.debounce ? JSON.stringify(input.debounce) : null,
      webhook_token_hash: token === null ? null : sha256Hex(token),
      next_run_at: null,
      last_run_at: null,
      created_by: actor,
      created_at: now,
      updated_at: now,
    };
    validateSchedule(row);
    row.next_run_at = nextRunAt(row, now);
    await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'routine.create', resource: { type: 'routine', id: row.id } });
      await this.store.insertRoutine(tx, row);
    });
    await this.changed();
    const routine = toRoutine(row);
    return token === null ? routine : { ...routine, webhook_url: this.webhookUrl(token), webhook_token: token };
  }

  private async row(tx: Tx, id: string): Promise<RoutineRow> {
    const row = await this.store.findRoutine(tx, id);
    if (!row) throw new NotFound('Routine', id);
    return row;
  }

  /** The routine `principal` is about to change: 404 unknown, 403 when it may not change it. */
  private async changeable(tx: Tx, id: string, principal: Principal): Promise<RoutineRow> {
    const row = await this.row(tx, id);
    assertMayChange(principal, { type: 'routine', id, createdBy: row.created_by });
    return row;
  }

  async get(id: string): Promise<Routine> {
    return toRoutine(await this.row(autocommit, id));
  }

  async list(filter: RoutineFilter, window: Page): Promise<Paged<Routine>> {
    const result = await this.store.listRoutines(autocommit, filter, window);
    return mapPage(result, toRoutine);
  }

  /** Changes, pauses or resumes a routine (its creator's, or any for the platform); a pause or resume is an event with the patch's `reason`. */
  async update(id: string, patch: UpdateRoutineBody, principal: Principal): Promise<Routine> {
    const now = this.deps.clock.now();
    let token: string | null = null;
    const updated = await this.store.inTransaction(async (tx) => {
      const current = await this.changeable(tx, id, principal);
      await this.deps.audit.record(tx, {
        action: `routine.${patch.enabled === undefined ? 'update' : patch.enabled ? 'resume' : 'pause'}`,
        resource: { type: 'routine', id },
      });
      const next: RoutineRow = {
        ...current,
        ...(patch.name !== undefined && { name: patch.name }),
        ...(patch.description !== undefined && { description: patch.description }),
        ...(patch.trigger_type !== undefined && { trigger_type: patch.trigger_type }),
        ...(patch.cron_expression !== undefined && { cron_expression: patch.cron_expression }),
        ...(patch.timezone !== undefined && { timezone: patch.timezone }),
        ...(patch.target_agent !== undefined && { target_agent: patch.target_agent }),
        ...(patch.payload !== undefined && { payload: JSON.stringify(patch.payload) }),
        ...(patch.enabled !== undefined && { enabled: patch.enabled ? 1 : 0 }),
        ...(patch.catch_up !== undefined && { catch_up: patch.catch_up }),
        ...(patch.overlap !== undefined && { overlap: patch.overlap }),
        ...(patch.timeout_seconds !== undefined && { timeout_seconds: patch.timeout_seconds }),
        ...(patch.debounce !== undefined && { debounce: patch.debounce === null ? null : JSON.stringify(patch.debounce) }),
        updated_at: now,
      };
      // Switching away from cron drops the expression (unless the patch sets one, which validate rejects).
      if (patch.trigger_type === 'webhook' && patch.cron_expression === undefined) next.cron_expression = null;
      if (patch.trigger_type === 'cron' && patch.debounce === undefined) next.debounce = null;
      validateSchedule(next);
      if (next.trigger_type === 'webhook' && next.webhook_token_hash === null) {
        token = newSecret();
        next.webhook_token_hash = sha256Hex(token);
      }
      if (next.trigger_type === 'cron') next.webhook_token_hash = null;
      // A resume or a schedule change starts from now: nothing missed while paused fires.
      const scheduleChanged =
        next.enabled !== current.enabled ||
        next.cron_expression !== current.cron_expression ||
        next.timezone !== current.timezone ||
        next.trigger_type !== current.trigger_type;
      if (scheduleChanged) next.next_run_at = nextRunAt(next, now);
      const { id: _id, ...changes } = next;
      await this.store.updateRoutine(tx, id, changes);
      if (next.enabled !== current.enabled) {
        await this.deps.events.append(tx, {
          type: next.enabled === 1 ? 'routine.resumed' : 'routine.paused',
          subject: id,
          actor: principal.actor,
          data: { routine_id: id, name: next.name },
          reason: patch.reason,
        });
      }
      return next;
    });
    await this.changed();
    const routine = toRoutine(updated);
    return token === null ? routine : { ...routine, webhook_url: this.webhookUrl(token), webhook_token: token };
  }

  async delete(id: string, principal: Principal): Promise<void> {
    await this.store.inTransaction(async (tx) => {
      await this.changeable(tx, id, principal);
      await this.deps.audit.record(tx, { action: 'routine.delete', resource: { type: 'routine', id } });
      const outstanding = await this.store.deleteRoutine(tx, id);
      for (const messageId of outstanding) await this.deps.inbox.cancel(tx, messageId, 'routine deleted');
    });
    await this.changed();
  }

  async rotateToken(id: string, principal: Principal): Promise<{ webhook_url: string; webhook_token: string }> {
    const token = newSecret();
    await this.store.inTransaction(async (tx) => {
      const row = await this.changeable(tx, id, principal);
      await this.deps.audit.record(tx, { action: 'routine.rotate_token', resource: { type: 'routine', id } });
      if (row.trigger_type !== 'webhook') throw new Conflict(`Routine '${id}' is not a webhook routine`);
      await this.store.updateRoutine(tx, id, { webhook_token_hash: sha256Hex(token), updated_at: this.deps.clock.now() });
    });
    return { webhook_url: this.webhookUrl(token), webhook_token: token };
  }

  async preview(id: string, count: number): Promise<string[]> {
    const row = await this.row(autocommit, id);
    if (row.trigger_type !== 'cron') throw new Conflict(`Routine '${id}' is a webhook routine and has no schedule`);
    return Schedule.of(row.cron_expression!, row.timezone)
      .upcoming(this.deps.clock.now(), count)
      .map((t) => iso(t));
  }

  /** Runs a routine now (manual trigger, by `actor`): 409 while it is paused. */
  async trigger(id: string, request: { payload?: unknown; reason?: string }, actor: string): Promise<Execution> {
    const execution = await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'routine.fire', resource: { type: 'routine', id } });
      const row = await this.row(tx, id);
      if (row.enabled !== 1) throw new Conflict(`Routine '${id}' is paused; resume it (PATCH enabled=true) first`);
      const started = toExecution(await this.startExecution(tx, row, 'manual', null, request.payload ?? JSON.parse(row.payload)));
      await this.deps.events.append(tx, {
        type: 'routine.triggered',
        subject: id,
        actor,
        data: { routine_id: id, execution_id: started.id, payload: started.payload },
        reason: request.reason,
      });
      return started;
    });
    // A new deadline the scheduler must watch.
    await this.changed();
    return execution;
  }

  /**
   * The routine a webhook token fires (the token authenticates): 404 unknown, 409 paused.
   * Asked before the request's body is read, so that a caller without a token holds no memory.
   */
  async webhookRoutine(token: string): Promise<WebhookRoutine> {
    const row = await this.store.findRoutineByTokenHash(autocommit, sha256Hex(token));
    if (!row || row.trigger_type !== 'webhook') throw new NotFound('Webhook');
    if (row.enabled !== 1) throw new Conflict('This routine is paused');
    return row;
  }

  /**
   * A webhook invocation of the routine `webhookRoutine` found; the body becomes the payload. A
   * debounced routine's call joins the burst of its key instead (execution_id null).
   */
  async invokeWebhook(routine: WebhookRoutine, body: unknown): Promise<{ execution_id: string | null }> {
    const payload = body ?? {};
    const execution = await this.store.inTransaction(async (tx) => {
      await this.deps.audit.record(tx, { action: 'routine.fire', resource: { type: 'routine', id: routine.id } });
      if (routine.debounce === null) return this.startExecution(tx, routine, 'webhook', null, payload);
      const debounce = JSON.parse(routine.debounce) as Debounce;
      const key = debounce.key === undefined ? '' : String(render(debounce.key, { input: {}, steps: {}, event: payload }) ?? '');
      await this.deps.debounces.join(tx, burstRow('routine', routine.id, debounce, key, payload, this.deps.clock.now()));
      return null;
    });
    // A new deadline, or a burst's end, the scheduler must watch.
    await this.changed();
    return { execution_id: execution?.id ?? null };
  }

  /** Starts the executions of debounced bursts that are due, each with its last call's body. */
  fireDebounced(): Promise<number> {
    return this.deps.debounces.fireDue(
      () => this.deps.clock.now(),
      this.fireBatchSize,
      async (tx, burst) => {
        const routine = await this.store.findRoutine(tx, burst.owner_id);
        if (!routine || routine.enabled !== 1 || routine.trigger_type !== 'webhook') return false;
        await this.startExecution(tx, routine, 'webhook', null, JSON.parse(burst.event) as unknown);
        return true;
      },
    );
  }

  /** Creates an execution and puts `routine.execute` in the target's inbox, in `tx`. */
  private async startExecution(
    tx: Tx,
    routine: RoutineRow,
    trigger: ExecutionTrigger,
    scheduledFor: number | null,
    payload: unknown,
  ): Promise<ExecutionRow> {
    const [row] = await this.startExecutions(tx, [{ routine, trigger, scheduledFor, payload, id: newId('exe') }]);
    if (trigger !== 'cron') await this.store.updateRoutine(tx, routine.id, { last_run_at: row!.created_at });
    return row!;
  }

  /** Creates executions with their inbox messages in `tx`: one insert for each kind, however many. */
  private async startExecutions(
    tx: Tx,
    starts: {
      routine: Pick<RoutineRow, 'id' | 'target_agent' | 'timeout_seconds'>;
      trigger: ExecutionTrigger;
      scheduledFor: number | null;
      payload: unknown;
      id: string;
    }[],
  ): Promise<ExecutionRow[]> {
    if (starts.length === 0) return [];
    const now = this.deps.clock.now();
    const { messages: sent } = await this.deps.inbox.send({
      tx,
      messages: starts.map(({ routine, trigger, payload, id }) => ({
        source: PLATFORM_SENDER,
        destination: routine.target_agent,
        event_name: ROUTINE_EVENT,
        payload: { routine_id: routine.id, execution_id: id, trigger, payload },
        origin: { kind: 'routine_execution', ref: id },
        // The fire's span (a child of the request for manual and webhook fires); the message's
        // send is its child, so the agent's work continues the fire's trace.
        traceparent: fireSpan(routine.id, id, trigger),
      })),
    });
    const rows = starts.map(({ routine, trigger, scheduledFor, payload, id }, i): ExecutionRow => ({
      id,
      routine_id: routine.id,
      status: 'pending',
      trigger,
      payload: JSON.stringify(payload),
      scheduled_for: scheduledFor,
      message_id: sent[i]!.message_id,
      output: null,
      deadline_at: now + routine.timeout_seconds * 1000,
      created_at: now,
      started_at: null,
      completed_at: null,
    }));
    await this.store.insertExecutions(tx, rows);
    return rows;
  }

  async listExecutions(routineId: string, status: ExecutionStatus | undefined, window: Page): Promise<Paged<Execution>> {
    await this.row(autocommit, routineId);
    const result = await this.store.listExecutions(autocommit, routineId, status, window);
    return mapPage(result, toExecution);
  }

  async getExecution(id: string): Promise<Execution> {
    const row = await this.store.findExecution(autocommit, id);
    if (!row) throw new NotFound('Execution', id);
    return toExecution(row);
  }

  /** Deletes an execution record: a change to its routine's history, so the routine's creator's (or the platform's). */
  async deleteExecution(id: string, principal: Principal): Promise<void> {
    const execution = await this.store.findExecution(autocommit, id);
    if (execution) await this.changeable(autocommit, execution.routine_id, principal);
    if (!(await this.store.deleteExecution(autocommit, id))) throw new NotFound('Execution', id);
  }

  async listFires(routineId: string, window: Page): Promise<Paged<Fire>> {
    await this.row(autocommit, routineId);
    const result = await this.store.listFires(autocommit, routineId, window);
    return mapPage(result, toFire);
  }

  /** Messaging calls this inside the transaction that delivers, acknowledges or dead-letters. */
  async handleOutcome(tx: Tx, outcome: MessageOutcome): Promise<void> {
    const now = this.deps.clock.now();
    const id = outcome.origin.ref;
    if (outcome.status === 'delivered') {
      await this.store.transitionExecution(tx, id, ['pending'], { status: 'running', started_at: now });
      return;
    }
    const execution = await this.store.findExecution(tx, id);
    if (!execution) return;
    const succeeded = outcome.status === 'acknowledged';
    const output = succeeded ? (outcome.output ?? null) : (outcome.reason ?? 'dead-lettered');
    const finished = await this.store.transitionExecution(tx, id, ['pending', 'running'], {
      status: succeeded ? 'success' : 'failed',
      output: outputJson(output),
      started_at: execution.started_at ?? now,
      completed_at: now,
    });
    // The agent's acknowledgement or rejection finished it.
    if (finished) await this.deps.events.append(tx, executionFinished(execution, succeeded, output, outcome.destination));
  }

  /**
   * Fires every due cron slot (the scheduler's pass). Each slot is a ledger row unique on
   * (routine_id, scheduled_for), written in the same transaction as its execution and inbox
   * message, so restarts, a second node or a racing trigger never fire a slot twice.
   * Returns how many executions were started.
   *
   * The store's `fireLanes` batches run at once (PostgreSQL: each claims other rows, SKIP
   * LOCKED), so one batch's statements run in the database while this process prepares the next.
   */
  async fireDue(): Promise<number> {
    const lanes = await Promise.all(Array.from({ length: this.store.fireLanes }, () => this.fireBatches()));
    return lanes.reduce((sum, started) => sum + started, 0);
  }

  private async fireBatches(): Promise<number> {
    let started = 0;
    for (;;) {
      const now = this.deps.clock.now();
      const { fired, claimed } = await this.store.inTransaction((tx) => this.fireBatch(tx, now));
      started += fired;
      if (claimed < this.fireBatchSize) return started;
    }
  }

  /** Claims a batch of due routines and fires (or records as skipped) their due slots, in `tx`. */
  private async fireBatch(tx: Tx, now: number): Promise<{ fired: number; claimed: number }> {
    const due = await this.store.claimDueRoutines(tx, now, this.fireBatchSize);
    if (due.length === 0) return { fired: 0, claimed: 0 };
    const busy = await this.store.routinesWithOpenExecutions(
      tx,
      due.filter((r) => r.overlap === 'skip').map((r) => r.id),
    );
    const fires: FireRow[] = [];
    const byRoutine = new Map(due.map((r) => [r.id, r]));
    for (const routine of due) {
      const schedule = Schedule.of(routine.cron_expression!, routine.timezone);
      const slots = schedule.dueSlots(routine.next_run_at!, now);
      const decision = decideSlots(slots, now, routine.catch_up);
      let running = busy.has(routine.id);
      let fired = false;
      for (const slot of decision.fire) {
        if (routine.overlap === 'skip' && running) {
          fires.push(fireRow(routine.id, slot, now, 'skipped', 'overlap: the previous execution has not finished'));
          continue;
        }
        fires.push(fireRow(routine.id, slot, now, 'fired', null, newId('exe', now)));
        this.deps.metrics.routineFired((now - slot) / 1000);
        running = true;
        fired = true;
      }
      for (const { slot, reason } of decision.skip) fires.push(fireRow(routine.id, slot, now, 'skipped', reason));
      const lastSlot = slots[slots.length - 1] ?? routine.next_run_at!;
      routine.next_run_at = schedule.next(Math.max(now, lastSlot));
      if (fired) routine.last_run_at = now;
    }
    await this.store.saveSchedules(tx, due);
    const inserted = await this.store.insertFires(tx, fires);
    const started = await this.startExecutions(
      tx,
      inserted
        .filter((fire) => fire.outcome === 'fired')
        .map((fire) => {
          const routine = byRoutine.get(fire.routine_id)!;
          return {
            routine,
            trigger: 'cron' as const,
            scheduledFor: fire.scheduled_for,
            payload: JSON.parse(routine.payload),
            id: fire.execution_id!,
          };
        }),
    );
    return { fired: started.length, claimed: due.length };
  }

  /** Fails executions that outlived `timeout_seconds` and withdraws their messages. */
  async expireTimedOut(): Promise<number> {
    const now = this.deps.clock.now();
    return this.store.inTransaction(async (tx) => {
      const expired = await this.store.claimTimedOut(tx, now, FIRE_BATCH);
      const events: NewEvent[] = [];
      for (const execution of expired) {
        const routine = await this.store.findRoutine(tx, execution.routine_id);
        const seconds = routine?.timeout_seconds ?? Math.round((execution.deadline_at - execution.created_at) / 1000);
        const output = `timed out after ${seconds} s without an acknowledgement`;
        if (
          await this.store.transitionExecution(tx, execution.id, ['pending', 'running'], {
            status: 'failed',
            output: outputJson(output),
            completed_at: now,
          })
        ) {
          events.push(executionFinished(execution, false, output, SYSTEM_ACTOR));
        }
        if (execution.message_id) await this.deps.inbox.cancel(tx, execution.message_id, 'execution timed out');
      }
      await this.deps.events.append(tx, ...events);
      return expired.length;
    });
  }

  /** When the scheduler must look again: the earliest due slot or execution deadline. */
  async nextWakeAt(): Promise<number | null> {
    const times = (
      await Promise.all([this.store.nextDueAt(autocommit), this.store.nextDeadline(autocommit), this.deps.debounces.nextAt(autocommit)])
    ).filter((t): t is number => t !== null);
    return times.length === 0 ? null : Math.min(...times);
  }
}
