import { expect } from 'vitest';

/** The last event of a step for each step status (what GET run shows must be where the timeline ends). */
const LAST_EVENT: Record<string, string[]> = {
  completed: ['step.completed'],
  failed: ['step.failed'],
  skipped: ['step.skipped'],
  cancelled: ['step.cancelled'],
  waiting: ['step.waiting'],
  running: ['step.started'],
  // Not started, or waiting out a retry backoff / a re-route.
  pending: ['step.retrying', 'run.revised'],
};

/**
 * Checks that a run's events (GET …/events) tell the same story as its steps (GET run): ordered
 * by seq and time, opened by run.started and closed by the run's final status, one start per
 * attempt of every step, and every step's last event matching its status.
 */
export function expectTimelineMatches(run: any, events: any[]): void {
  const seqs = events.map((e) => e.seq);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  const times = events.map((e) => Date.parse(e.at));
  expect(times).toEqual([...times].sort((a, b) => a - b));
  expect(events[0]).toMatchObject({ type: 'run.started', step_id: null });

  const runEvents = events.filter((e) => e.step_id === null).map((e) => e.type);
  const last = runEvents[runEvents.length - 1];
  if (['completed', 'failed', 'cancelled'].includes(run.status)) {
    expect(last).toBe(`run.${run.status}`);
    expect(runEvents.filter((t) => t === last)).toHaveLength(1);
  } else if (run.status === 'waiting') {
    expect(last).toBe('run.waiting');
  } else {
    expect(['run.started', 'run.resumed', 'run.redriven']).toContain(last);
  }

  for (const step of run.steps) {
    const mine = events.filter((e) => e.step_id === step.id);
    const context = `${step.id} (${step.status}): ${JSON.stringify(mine.map((e) => e.type))}`;
    // A step starts once per attempt: step.started, or step.waiting for a human step.
    const starts = mine.filter((e) => e.type === 'step.started' || e.type === 'step.waiting').length;
    expect(starts, context).toBe(step.attempt);
    if (step.status === 'pending' && step.attempt === 0) {
      expect(mine, context).toEqual([]);
      continue;
    }
    const lastOfStep = mine[mine.length - 1]?.type;
    expect(LAST_EVENT[step.status], context).toContain(lastOfStep);
    const finishes = mine.filter((e) => ['step.completed', 'step.failed', 'step.skipped', 'step.cancelled'].includes(e.type));
    expect(finishes.length, context).toBe(['completed', 'failed', 'skipped', 'cancelled'].includes(step.status) ? 1 : 0);
  }
}
