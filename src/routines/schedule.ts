import { cronProblem, isValidTimeZone, Schedule } from '../kernel/cron.js';
import { InvalidRequest } from '../kernel/errors.js';
import { collectReferences } from '../coordination/templates.js';
import type { Debounce } from '../debounce/store.js';
import { SpanKind, startSpan, traceparentOfSpan } from '../kernel/tracing.js';
import type { RoutineRow } from './store.js';
import type { ExecutionTrigger } from './tables.js';

/** Checks the schedule fields of a routine as it will be after a change. */
export function validateSchedule(routine: Pick<RoutineRow, 'trigger_type' | 'cron_expression' | 'timezone' | 'debounce'>): void {
  if (!isValidTimeZone(routine.timezone)) throw InvalidRequest.field('timezone', `'${routine.timezone}' is not an IANA time zone`);
  if (routine.trigger_type === 'cron') {
    if (routine.cron_expression === null) throw InvalidRequest.field('cron_expression', 'is required when trigger_type is cron');
    const problem = cronProblem(routine.cron_expression, routine.timezone);
    if (problem) throw InvalidRequest.field('cron_expression', problem);
  } else if (routine.cron_expression !== null) {
    throw InvalidRequest.field('cron_expression', 'is only allowed when trigger_type is cron');
  }
  if (routine.debounce === null) return;
  if (routine.trigger_type !== 'webhook') throw InvalidRequest.field('debounce', 'is only allowed when trigger_type is webhook');
  const { key } = JSON.parse(routine.debounce) as Debounce;
  for (const reference of key === undefined ? [] : collectReferences(key)) {
    if (typeof reference === 'string') throw InvalidRequest.field('debounce.key', reference);
    if (reference.root !== 'event')
      throw InvalidRequest.field('debounce.key', `'{{${reference.expression}}}': a debounce key reads only event.* (the body)`);
  }
}

/** When a routine fires next after `after`: null unless it is an enabled cron routine. */
export function nextRunAt(
  row: Pick<RoutineRow, 'trigger_type' | 'cron_expression' | 'timezone' | 'enabled'>,
  after: number,
): number | null {
  if (row.trigger_type !== 'cron' || row.enabled !== 1) return null;
  return Schedule.of(row.cron_expression!, row.timezone).next(after);
}

/** A routine fire's span (`fire_routine {routine}`), ended at once; returns its traceparent. */
export function fireSpan(routineId: string, executionId: string, trigger: ExecutionTrigger): string | null {
  const span = startSpan(`fire_routine ${routineId}`, {
    kind: SpanKind.PRODUCER,
    attributes: () => ({
      'switchboard.routine.id': routineId,
      'switchboard.execution.id': executionId,
      'switchboard.routine.trigger': trigger,
    }),
  });
  span.end();
  return traceparentOfSpan(span);
}
