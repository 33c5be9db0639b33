import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it, vi } from 'vitest';
import { autocommit } from '../../src/kernel/tx.js';
import { MessagingStore } from '../../src/messaging/store.js';
import { postgresTestUrl } from '../helpers/database.js';
import { genericPlanOf } from '../helpers/query-plans.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

/**
 * An acknowledgement names up to 500 ids and checks each one's state and inbox. With statistics
 * taken before a burst filled an inbox, PostgreSQL's generic plan (a named statement's, from its
 * sixth run) walked the inbox's whole pending range on (destination, state, …) and filtered the
 * ids, for every batch: the ack must find its rows by id whatever the statistics say. The other
 * by-id statements (reject, release, extend, settle) name only the id. (SQLite plans without
 * statistics of this kind.)
 */
(postgresTestUrl() ? describe : describe.skip)('messaging: the acknowledgement finds its rows by id [postgres]', () => {
  const server = useServer('postgres');

  it('uses the id index under statistics from before a burst', async () => {
    const db = server.app.platform.database.db;
    const agent = await server.agent('plan-acker');
    const burst = async () => {
      for (let batch = 0; batch < 10; batch++) {
        const messages = Array.from({ length: 500 }, (_, i) => ({ destination: 'plan-acker', event_name: 'burst', payload: { i } }));
        expect((await server.api.post(`${M}/send-batch`, { messages })).status).toBe(201);
      }
    };
    // Statistics of a table whose messages spread over 50 inboxes and four states, then a burst
    // of 5,000 into one inbox: its range of (destination, state) looks like 25 rows.
    await sql`alter table messages set (autovacuum_enabled = off)`.execute(db);
    await burst();
    await sql`update messages set destination = 'elsewhere-' || (seq % 50),
      state = (array['pending', 'acked', 'dead', 'delivered'])[1 + seq % 4]`.execute(db);
    await sql`analyze messages`.execute(db);
    await burst();
    const got = await agent.get(`${M}/receive?max=100&timeout=0`);
    const ids = (got.body.data.messages as { message_id: string }[]).map((m) => m.message_id);
    expect(ids).toHaveLength(100);

    // The statement as the driver sends it (the store compiles its text once, with markers for values).
    const sent = vi.spyOn(pg.Client.prototype, 'query');
    const store = new MessagingStore(db, server.app.platform.database.caps);
    const acked = await store.acknowledgeReceived(autocommit, ids, 'plan-acker', null, Date.now());
    // Named statements, sent as { text, values, name }: PostgreSQL plans them generically from the sixth run on.
    const queries = sent.mock.calls.map(([query]) => query as unknown as { text?: string; values?: unknown[] });
    const ack = queries.find((query) => query.text?.includes('"acked"'));
    sent.mockRestore();
    expect(acked).toHaveLength(100);
    const plan = await genericPlanOf(server.app.platform.database, { sql: ack!.text!, parameters: ack!.values! });
    expect(plan).toContain('messages_id_key');
    expect(plan).not.toContain('messages_inbox');

    // The acknowledgements of one message each, from several inboxes in one statement, too (half with usage records).
    const more = (await agent.get(`${M}/receive?max=10&timeout=0`)).body.data.messages as { message_id: string }[];
    const sentOne = vi.spyOn(pg.Client.prototype, 'query');
    const now = Date.now();
    const usage = (i: number) => ({
      id: `usg_plan_${i}`,
      model: 'm',
      provider: 'p',
      input_tokens: 1,
      output_tokens: 2,
      cached_tokens: 0,
      cost_usd: 0.5,
      recorded_at: now,
    });
    const unheard = await store.acknowledgeUnheard(
      more.map((m, i) => ({ id: m.message_id, destination: 'plan-acker', usage: i % 2 === 0 ? usage(i) : null })),
      now,
    );
    const one = sentOne.mock.calls
      .map(([query]) => query as unknown as { text?: string; values?: unknown[] })
      .find((q) => q.text?.includes('unnest'));
    sentOne.mockRestore();
    expect(unheard).toHaveLength(10);
    // Arrays as PostgreSQL's text form, which genericPlanOf quotes as it quotes text.
    const parameters = one!.values!.map((value) => (Array.isArray(value) ? `{${value.join(',')}}` : value));
    const unheardPlan = await genericPlanOf(server.app.platform.database, { sql: one!.text!, parameters });
    expect(unheardPlan).toContain('messages_id_key');
    expect(unheardPlan).not.toContain('messages_inbox');
  });
});
