import { sql } from 'kysely';
import pg from 'pg';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

/**
 * The `held` flag of ordering keys (migration 0069) on the paths no route takes a message off
 * pending by (a deleted or cancelled message), at most once, and on PostgreSQL a send and an ack
 * of one key that overlap.
 */
describeEachDialect('messaging: ordering keys held by a flag', (dialect) => {
  const server = useServer(dialect);

  const send = async (destination: string, event_name: string, extra: Record<string, unknown> = {}) => {
    const res = await server.api.post(`${M}/send`, { destination, event_name, ...extra });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  };
  const received = async (agentId: string) => {
    const worker = await server.agent(agentId);
    const res = await worker.get(`${M}/receive?agent_id=${agentId}&max=10&timeout=0`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.messages as { message_id: string; event_name: string }[];
  };
  const names = async (agentId: string) => (await received(agentId)).map((m) => m.event_name);
  const ack = async (ids: string[]) => expect((await server.api.post(`${M}/acknowledge`, { message_ids: ids })).status).toBe(200);
  const inDatabase = async (statement: (db: ReturnType<typeof openDatabase>['db']) => Promise<unknown>) => {
    const handle = openDatabase(server.database.options(1));
    try {
      await statement(handle.db);
    } finally {
      await handle.close();
    }
  };

  it('frees the next pending message of a key when its head is deleted, past messages of the key cancelled while held', async () => {
    await send('held-delete', 'h1', { ordering_key: 'k' });
    await send('held-delete', 'h2', { ordering_key: 'k' });
    const h3 = await send('held-delete', 'h3', { ordering_key: 'k' });
    // A held message cancelled: a later send still sees h1 and h2 pending before it.
    await inDatabase((db) => sql`update messages set state = 'cancelled' where id = ${h3}`.execute(db));
    await send('held-delete', 'h4', { ordering_key: 'k' });
    expect(await names('held-delete')).toEqual(['h1']);
    await inDatabase((db) => sql`update messages set state = 'cancelled' where event_name = 'h2'`.execute(db));
    await inDatabase((db) => sql`delete from messages where event_name = 'h1'`.execute(db));
    const next = await received('held-delete');
    expect(next.map((m) => m.event_name)).toEqual(['h4']);
    await ack(next.map((m) => m.message_id));
    // Every message of the key settled: the next send is free at once.
    await send('held-delete', 'h5', { ordering_key: 'k' });
    expect(await names('held-delete')).toEqual(['h5']);
  });

  it('frees the next message of a key when its head is cancelled', async () => {
    await send('held-cancel', 'c1', { ordering_key: 'k' });
    await send('held-cancel', 'c2', { ordering_key: 'k' });
    await inDatabase((db) => sql`update messages set state = 'cancelled' where event_name = 'c1'`.execute(db));
    expect(await names('held-cancel')).toEqual(['c2']);
  });

  it('frees the next message of a key when its head is delivered at most once', async () => {
    await send('held-amo', 'a1', { ordering_key: 'k', delivery_semantic: 'at_most_once' });
    await send('held-amo', 'a2', { ordering_key: 'k' });
    await send('held-amo', 'a3', { ordering_key: 'k' });
    expect(await names('held-amo')).toEqual(['a1']);
    expect(await names('held-amo')).toEqual(['a2']);
    expect(await names('held-amo')).toEqual([]);
  });

  it.runIf(dialect === 'postgres')(
    'frees a message sent while the ack of its head commits, whichever of the two takes the key first',
    async () => {
      // The ack sleeps after its settle took the key's lock (a statement trigger that fires after
      // messages_advance_update), or the send sleeps after its insert took it, until the other one waits.
      const admin = new pg.Client({ connectionString: server.database.databaseUrl! });
      await admin.connect();
      try {
        await admin.query(`create function slow_ack() returns trigger language plpgsql as $$ begin
          if exists (select 1 from after where event_name = 'slow-ack' and state = 'acked') then perform pg_sleep(0.3); end if;
          return null; end $$;
        create trigger messages_b_slow_ack after update on messages referencing new table as after
          for each statement execute function slow_ack();
        create function slow_send() returns trigger language plpgsql as $$ begin perform pg_sleep(0.3); return null; end $$;
        create trigger slow_send after insert on messages for each row when (new.event_name = 'slow-send') execute function slow_send()`);
        const sleeping = async () => {
          for (;;) {
            const { rows } = await admin.query(
              "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event = 'PgSleep'",
            );
            if (rows[0].n > 0) return;
          }
        };
        for (const [first, head, next] of [
          ['ack', 'slow-ack', 'n1'],
          ['send', 'head', 'slow-send'],
        ] as const) {
          const inbox = `held-race-${first}`;
          await send(inbox, head, { ordering_key: 'k' });
          const [leased] = await received(inbox);
          const acked = first === 'ack' ? server.api.post(`${M}/acknowledge`, { message_ids: [leased!.message_id] }) : null;
          const sent = first === 'send' ? server.api.post(`${M}/send`, { destination: inbox, event_name: next, ordering_key: 'k' }) : null;
          await sleeping();
          const [ackRes, sendRes] = await Promise.all([
            acked ?? server.api.post(`${M}/acknowledge`, { message_ids: [leased!.message_id] }),
            sent ?? server.api.post(`${M}/send`, { destination: inbox, event_name: next, ordering_key: 'k' }),
          ]);
          expect(ackRes.status, ackRes.text).toBe(200);
          expect(sendRes.status, sendRes.text).toBe(201);
          expect(await names(inbox), first).toEqual([next]);
        }
      } finally {
        await admin.end();
      }
    },
  );

  it.runIf(dialect === 'postgres')(
    'frees the one after when the next message of a key is settled while the ack of its head frees it',
    async () => {
      const admin = new pg.Client({ connectionString: server.database.databaseUrl! });
      await admin.connect();
      try {
        await send('held-skip', 's1', { ordering_key: 'k' });
        await send('held-skip', 's2', { ordering_key: 'k' });
        await send('held-skip', 's3', { ordering_key: 'k' });
        const [head] = await received('held-skip');
        // s2 is cancelled in a transaction the ack's freeing of s2 waits for: the ack frees s3 instead.
        await admin.query('begin');
        await admin.query("update messages set state = 'cancelled' where event_name = 's2'");
        const acked = server.api.post(`${M}/acknowledge`, { message_ids: [head!.message_id] });
        for (;;) {
          const { rows } = await admin.query(
            "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
          );
          if (rows[0].n > 0) break;
        }
        await admin.query('commit');
        expect((await acked).status).toBe(200);
        expect(await names('held-skip')).toEqual(['s3']);
      } finally {
        await admin.end();
      }
    },
  );
});
