import { newId } from '../kernel/ids.js';
import { iso } from '../kernel/clock.js';
import type { NewEvent } from '../kernel/ports.js';
import type { Execution, Fire, Routine } from './schemas.js';
import type { ExecutionRow, FireRow, RoutineRow } from './store.js';

/*
 * What callers and the event log see of routines, executions and fires: the rows as the API
 * answers them.
 */

export function toRoutine(row: RoutineRow): Routine {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    trigger_type: row.trigger_type,
    cron_expression: row.cron_expression,
    timezone: row.timezone,
    target_agent: row.target_agent,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    enabled: row.enabled === 1,
    catch_up: row.catch_up,
    overlap: row.overlap,
    timeout_seconds: row.timeout_seconds,
    debounce: row.debounce === null ? null : (JSON.parse(row.debounce) as Routine['debounce']),
    next_run_at: iso(row.next_run_at),
    last_run_at: iso(row.last_run_at),
    created_by: row.created_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** routine.execution.succeeded or .failed, for an execution that just finished. */
export function executionFinished(
  execution: Pick<ExecutionRow, 'id' | 'routine_id' | 'trigger'>,
  succeeded: boolean,
  output: unknown,
  actor: string,
): NewEvent {
  return {
    type: succeeded ? 'routine.execution.succeeded' : 'routine.execution.failed',
    subject: execution.routine_id,
    actor,
    data: {
      routine_id: execution.routine_id,
      execution_id: execution.id,
      trigger: execution.trigger,
      status: succeeded ? 'success' : 'failed',
      output,
    },
  };
}

export function toExecution(row: ExecutionRow): Execution {
  return {
    id: row.id,
    routine_id: row.routine_id,
    status: row.status,
    trigger: row.trigger,
    payload: JSON.parse(row.payload) as unknown,
    scheduled_for: iso(row.scheduled_for),
    message_id: row.message_id,
    output: row.output === null ? null : (JSON.parse(row.output) as unknown),
    created_at: iso(row.created_at),
    started_at: iso(row.started_at),
    completed_at: iso(row.completed_at),
  };
}

export function toFire(row: FireRow): Fire {
  return {
    id: row.id,
    routine_id: row.routine_id,
    scheduled_for: iso(row.scheduled_for),
    outcome: row.outcome,
    reason: row.reason,
    execution_id: row.execution_id,
    created_at: iso(row.created_at),
  };
}

/** An execution's output (the agent's acknowledge output, or why it failed) as its column's JSON text. */
export function outputJson(output: unknown): string | null {
  return output === undefined || output === null ? null : JSON.stringify(output);
}

/** A fire ledger row: a cron slot fired (with its execution) or skipped (with why). */
export function fireRow(
  routineId: string,
  slot: number,
  now: number,
  outcome: 'fired' | 'skipped',
  reason: string | null,
  executionId: string | null = null,
): FireRow {
  return {
    id: newId('fire', now),
    routine_id: routineId,
    scheduled_for: slot,
    outcome,
    reason,
    execution_id: executionId,
    created_at: now,
  };
}
