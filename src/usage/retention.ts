import { autocommit } from '../kernel/tx.js';
import type { RetentionBatch, RetentionRule } from '../kernel/ports.js';
import type { UsageStore } from './store.js';

const DAY_MS = 86_400_000;

/**
 * The rollup's days before yesterday (UTC) merged into one row per key each, a day per pass:
 * totals then read a row per key per day for the past and per hour for the last day or two.
 * Nothing more arrives for them: a record's hour is the time it was recorded.
 */
export function usageRollupMerge(store: UsageStore): RetentionRule {
  return {
    name: 'usage-rollup',
    async deleteExpired(now): Promise<RetentionBatch> {
      const before = now - (now % DAY_MS) - DAY_MS;
      const day = await store.oldestUnmergedDay(autocommit, before);
      if (day === null) return { deleted: {}, more: false };
      const removed = await store.inTransaction((tx) => store.mergeDay(tx, day));
      return { deleted: { usage_hourly: removed }, more: day + DAY_MS < before };
    },
  };
}
