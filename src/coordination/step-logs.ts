import { iso, type Clock } from '../kernel/clock.js';
import { Conflict, NotFound } from '../kernel/errors.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import type { EventLog } from '../kernel/ports.js';
import { autocommit } from '../kernel/tx.js';
import type { Caller } from './caller.js';
import { executingStep } from './checkpoints.js';
import type { StepLogRow, StepWorkStore } from './step-work-store.js';

/** The most lines one step's log holds: a log, not a store of output. */
export const MAX_STEP_LOG_LINES = 1000;
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface StepLogLine {
  seq: number;
  step_id: string;
  attempt: number;
  level: LogLevel;
  message: string;
  at: string;
}

const toLine = (row: StepLogRow): StepLogLine => ({
  seq: row.seq,
  step_id: row.step_id,
  attempt: row.attempt,
  level: row.level as LogLevel,
  message: row.line,
  at: iso(row.created_at),
});

/**
 * Step logs: the agent executing a step appends lines (kept with the run, and told to the event
 * log as `run.step.log`, so the console and event streams follow them live); anyone who may read
 * the run reads them.
 */
export class StepLogService {
  constructor(private readonly deps: { store: StepWorkStore; events: EventLog; clock: Clock }) {}

  async append(caller: Caller, runId: string, stepId: string, message: string, level: LogLevel = 'info'): Promise<StepLogLine> {
    const { store, events, clock } = this.deps;
    return store.inTransaction(async (tx) => {
      const step = await executingStep(store, tx, caller, runId, stepId);
      if ((await store.logLength(tx, runId, stepId)) >= MAX_STEP_LOG_LINES) {
        throw new Conflict(`The log of step '${stepId}' is full (${MAX_STEP_LOG_LINES} lines)`);
      }
      const row = await store.appendLog(tx, {
        run_id: runId,
        step_id: stepId,
        attempt: step.attempt,
        level,
        line: message,
        created_at: clock.now(),
      });
      const line = toLine(row);
      await events.append(tx, { type: 'run.step.log', subject: runId, actor: caller.actor, data: { run_id: runId, ...line } });
      return line;
    });
  }

  async list(runId: string, stepId: string | undefined, window: Page): Promise<Paged<StepLogLine>> {
    const { store } = this.deps;
    const page = await store.logsOf(autocommit, runId, stepId, window);
    if (page.total === 0 && !(await store.runExists(autocommit, runId))) throw new NotFound('Run', runId);
    return mapPage(page, toLine);
  }
}
