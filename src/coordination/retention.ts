import { autocommit } from '../kernel/tx.js';
import type { RetentionRule } from '../kernel/ports.js';
import type { RunRetentionStore } from './retention-store.js';
import type { StepRefs } from './step-refs.js';

const DAY_MS = 86_400_000;

/**
 * What coordination lets go of, and when: top-level runs `runDays` (or their plan's
 * `retention_days`) after they finished, with
 * their child runs, steps, timelines (the runs' checkpoints: a run's state is its row and
 * steps), tags, metadata and the artifacts of their steps' outputs that came by reference; trigger fires `runDays` after they fired. A run still running or
 * waiting has no end, and a finished run whose child is unfinished waits for it.
 */
export function runRetention(store: RunRetentionStore, refs: StepRefs, runDays: number): RetentionRule[] {
  return [
    {
      name: 'runs',
      async deleteExpired(now, limit) {
        const batch = await store.deleteFinished(autocommit, now, runDays, limit);
        // After the runs' commit: a crash in between leaves artifacts nothing holds, not references to nothing.
        const artifacts = await refs.release(batch.runIds);
        return { deleted: { ...batch.deleted, payload_artifacts: artifacts }, more: batch.seen === limit };
      },
    },
    {
      name: 'trigger-fires',
      async deleteExpired(now, limit) {
        const fires = await store.deleteFiresBefore(autocommit, now - runDays * DAY_MS, limit);
        return { deleted: { trigger_fires: fires }, more: fires === limit };
      },
    },
  ];
}
