import { Statements } from '../db/statements.js';
import { Store } from '../db/store.js';
import { dbOf } from '../db/tx.js';
import type { Db } from '../db/database.js';
import type { DialectCapabilities } from '../db/capabilities.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { Tx } from '../kernel/tx.js';
import type { SubscriptionRow } from './message-rows.js';

/** Topic subscriptions: who is told of what is published. */
export class SubscriptionsStore extends Store {
  /** The candidates' lookup, asked by every publish. */
  private readonly statements: Statements;

  constructor(db: Db, caps: DialectCapabilities) {
    super(db, caps);
    this.statements = new Statements(db);
  }

  async insertSubscription(tx: Tx, row: SubscriptionRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('messaging_subscriptions').values(row).execute();
  }

  async findSubscription(tx: Tx, id: string): Promise<SubscriptionRow | undefined> {
    return dbOf(tx, this.db).selectFrom('messaging_subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async findSubscriptionFor(tx: Tx, agentId: string, topic: string): Promise<SubscriptionRow | undefined> {
    return dbOf(tx, this.db)
      .selectFrom('messaging_subscriptions')
      .selectAll()
      .where('agent_id', '=', agentId)
      .where('topic', '=', topic)
      .executeTakeFirst();
  }

  async listSubscriptions(tx: Tx, agentId: string | undefined, window: Page): Promise<Paged<SubscriptionRow>> {
    let query = dbOf(tx, this.db).selectFrom('messaging_subscriptions').selectAll().orderBy('id');
    if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
    return this.paginate(tx, query, window);
  }

  async deleteSubscription(tx: Tx, id: string): Promise<void> {
    await dbOf(tx, this.db).deleteFrom('messaging_subscriptions').where('id', '=', id).execute();
  }

  /** Subscriptions that may match `topic`: the exact ones and every wildcard pattern. */
  async candidateSubscriptions(tx: Tx, topic: string): Promise<SubscriptionRow[]> {
    // Asked on every publish: compiled once (building the query cost more than running it).
    const query = this.statements.compiled('candidates', { topic, wildcard: 1 }, (v) =>
      this.db
        .selectFrom('messaging_subscriptions')
        .selectAll()
        .where((eb) => eb.or([eb('topic', '=', v.topic), eb('wildcard', '=', v.wildcard)]))
        .orderBy('id'),
    );
    return (await dbOf(tx, this.db).executeQuery(query)).rows;
  }
}
