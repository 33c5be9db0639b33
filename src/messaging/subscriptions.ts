import type { Logger } from 'pino';
import { autocommit } from '../kernel/tx.js';
import { iso, type Clock } from '../kernel/clock.js';
import { InvalidRequest, NotFound } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { type Page, type Paged, mapPage } from '../kernel/pagination.js';
import { StagedPayload, type OutgoingMessage, type Publication, type PublishedEvent, type PublishListener } from '../kernel/ports.js';
import type { InboxService } from './inbox.js';
import type { PayloadRefs } from './payload-refs.js';
import { checkReceiver, type Caller } from './messages.js';
import type { SubscriptionRow } from './store.js';
import type { SubscriptionsStore } from './subscriptions-store.js';
import { hasWildcard, topicMatches, topicProblem } from '../kernel/topics.js';

export interface Subscription {
  id: string;
  agent_id: string;
  topic: string;
  created_at: string;
}

function toSubscription(row: SubscriptionRow): Subscription {
  return { id: row.id, agent_id: row.agent_id, topic: row.topic, created_at: iso(row.created_at) };
}

/**
 * Topics: agents subscribe to topic patterns; a publish sends one message to each subscriber's
 * inbox, then tells the publish listeners (coordination's triggers and waits).
 */
export class SubscriptionsService {
  private readonly publishListeners: PublishListener[] = [];

  constructor(
    private readonly deps: { store: SubscriptionsStore; inbox: InboxService; payloads: PayloadRefs; clock: Clock; logger: Logger },
  ) {}

  private get store() {
    return this.deps.store;
  }

  onPublish(listener: PublishListener): void {
    this.publishListeners.push(listener);
  }

  async subscribe(caller: Caller, agentId: string, topic: string): Promise<{ subscription: Subscription; created: boolean }> {
    checkReceiver(caller, agentId);
    const problem = topicProblem(topic, true);
    if (problem) throw InvalidRequest.field('topic', problem);
    const existing = await this.store.findSubscriptionFor(autocommit, agentId, topic);
    if (existing) return { subscription: toSubscription(existing), created: false };
    const now = this.deps.clock.now();
    const row: SubscriptionRow = { id: newId('sub', now), agent_id: agentId, topic, wildcard: hasWildcard(topic) ? 1 : 0, created_at: now };
    try {
      await this.store.insertSubscription(autocommit, row);
    } catch (err) {
      const raced = this.store.isUniqueViolation(err) ? await this.store.findSubscriptionFor(autocommit, agentId, topic) : undefined;
      if (raced) return { subscription: toSubscription(raced), created: false };
      throw err;
    }
    return { subscription: toSubscription(row), created: true };
  }

  async listSubscriptions(caller: Caller, agentId: string | undefined, window: Page): Promise<Paged<Subscription>> {
    const agent = agentId ?? (caller.admin ? undefined : caller.agentId!);
    if (agent !== undefined) checkReceiver(caller, agent);
    const page = await this.store.listSubscriptions(autocommit, agent, window);
    return mapPage(page, toSubscription);
  }

  async unsubscribe(caller: Caller, id: string): Promise<void> {
    const row = await this.store.findSubscription(autocommit, id);
    if (!row) throw new NotFound('Subscription', id);
    checkReceiver(caller, row.agent_id);
    await this.store.deleteSubscription(autocommit, id);
  }

  /** One message per matching subscriber, in one transaction; then the publish listeners. */
  async publish(
    caller: Caller,
    topic: string,
    payload: unknown,
    flow: Pick<OutgoingMessage, 'priority' | 'ordering_key' | 'fairness_key'> = {},
  ): Promise<{ topic: string; count: number; message_ids: string[] }> {
    const problem = topicProblem(topic, false);
    if (problem) throw InvalidRequest.field('topic', problem);
    const now = this.deps.clock.now();
    const source = caller.agentId ?? caller.actor;
    // No transaction around the read: a subscription made or removed while this runs is one
    // made just after or just before the publish. Most topics have no subscriber (events for
    // triggers and waits): then nothing is written at all.
    const candidates = await this.store.candidateSubscriptions(autocommit, topic);
    const subscribers = [...new Set(candidates.filter((s) => topicMatches(s.topic, topic)).map((s) => s.agent_id))];
    // A payload streamed to storage is kept once: subscribers get it by reference, a listener
    // that asks reads it back; once they are done it goes unless a message holds it.
    const ref = payload instanceof StagedPayload ? await this.deps.payloads.offload(caller, payload, subscribers) : null;
    try {
      const sent = await this.deps.inbox.sendAsSender(
        caller,
        subscribers.map((destination) => ({
          ...flow,
          source,
          destination,
          event_name: topic,
          ...(ref === null ? { payload } : { payload_ref: ref }),
        })),
      );
      let event: Promise<PublishedEvent> | undefined;
      const publication: Publication = {
        topic,
        event: () =>
          (event ??= (async () => ({
            topic,
            payload: ref === null ? payload : await this.deps.payloads.read(ref),
            published_at: iso(now),
            publisher: source,
          }))()),
      };
      for (const listener of this.publishListeners) {
        try {
          await listener(publication);
        } catch (err) {
          this.deps.logger.error({ err, topic }, 'publish listener failed');
        }
      }
      const ids = sent.messages.map((message) => message.message_id);
      return { topic, count: ids.length, message_ids: ids };
    } finally {
      if (ref !== null) await this.deps.payloads.discardUnheld(ref);
    }
  }
}
