import { autocommit } from '../kernel/tx.js';
import type { RetentionRule } from '../kernel/ports.js';
import type { EndColumn, MessageRetentionStore } from './retention-store.js';
import type { PayloadRefs } from './payload-refs.js';
import type { MessageState } from './tables.js';

const DAY_MS = 86_400_000;

/**
 * What messaging lets go of, and when: finished messages `messageDays` after they ended
 * (acknowledged, delivered at most once, cancelled before any delivery), dead letters and the
 * dead letters already redriven `deadLetterDays` after they died; each with its delivery
 * attempts, its idempotency key and the artifacts of its offloaded payload and output. Pending and leased messages are never finished.
 */
export function messageRetention(
  store: MessageRetentionStore,
  payloads: PayloadRefs,
  days: { messageDays: number; deadLetterDays: number },
): RetentionRule {
  const finished: [MessageState, EndColumn, number][] = [
    ['acked', 'acked_at', days.messageDays],
    ['delivered', 'delivered_at', days.messageDays],
    ['cancelled', 'created_at', days.messageDays],
    ['dead', 'dead_at', days.deadLetterDays],
    ['redriven', 'dead_at', days.deadLetterDays],
  ];
  return {
    name: 'messages',
    async deleteExpired(now, limit) {
      let messages = 0;
      let attempts = 0;
      let artifacts = 0;
      let more = false;
      for (const [state, ended, keepDays] of finished) {
        const batch = await store.deleteEnded(autocommit, state, ended, now - keepDays * DAY_MS, limit);
        messages += batch.messages.length;
        attempts += batch.attempts;
        // After the messages' commit: a crash in between leaves artifacts nothing holds, not references to nothing.
        artifacts += await payloads.release(batch.messages);
        more ||= batch.messages.length === limit;
      }
      return { deleted: { messages, message_deliveries: attempts, payload_artifacts: artifacts }, more };
    },
  };
}
