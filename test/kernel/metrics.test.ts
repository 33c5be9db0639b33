import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { DomainMetrics, TOP_INBOXES, topAndOther } from '../../src/kernel/metrics.js';

describe('DomainMetrics', () => {
  it('labels messages by the first token of their event name, and bounds the label set with `other`', async () => {
    const registry = new Registry();
    const metrics = new DomainMetrics(registry);
    metrics.messagesSent(['plan.step.execute', 'orders', 'orders.created']);
    metrics.messagesSent(Array.from({ length: 80 }, (_, i) => `kind${i}.created`));
    const sent = (await registry.getSingleMetric('switchboard_messages_sent_total')!.get()).values;
    expect(sent.find((v) => v.labels.class === 'orders')?.value).toBe(2);
    expect(sent.find((v) => v.labels.class === 'plan')?.value).toBe(1);
    expect(sent.length).toBe(51);
    expect(sent.find((v) => v.labels.class === 'other')?.value).toBe(80 - 48);
  });

  it('shows the deepest inboxes by agent and folds the rest into `other`', () => {
    const inboxes = Array.from({ length: TOP_INBOXES + 3 }, (_, i) => ({
      agent_id: `a${i}`,
      pending: 100 - i,
      oldest_pending_age_seconds: i,
    }));
    const depth = topAndOther(
      inboxes,
      (inbox) => inbox.pending,
      (a, b) => a + b,
    );
    expect(depth.size).toBe(TOP_INBOXES + 1);
    expect(depth.get('a0')).toBe(100);
    expect(depth.get('other')).toBe(3 * 100 - (TOP_INBOXES + TOP_INBOXES + 1 + TOP_INBOXES + 2));
    const age = topAndOther(inboxes, (inbox) => inbox.oldest_pending_age_seconds ?? 0, Math.max);
    expect(age.get('other')).toBe(TOP_INBOXES + 2);
  });
});
