import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Each inbox's pending and dead messages, counted by triggers on messages in the transaction of
 * every change (a send, an ack, a reject, a dead-letter, a redrive, a cancel, a retention delete),
 * so that looking at every inbox reads a row per agent, not every message held.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .createTable('inbox_counters')
    .addColumn('destination', 'text', (c) => c.primaryKey())
    .addColumn('pending', 'bigint', (c) => c.notNull())
    .addColumn('dead', 'bigint', (c) => c.notNull())
    .execute();
  await sql`
    insert into inbox_counters (destination, pending, dead)
    select destination, sum(case when state = 'pending' then 1 else 0 end), sum(case when state = 'dead' then 1 else 0 end)
    from messages where state in ('pending', 'dead') group by destination`.execute(db);
  if (caps.kind === 'postgres') {
    // Statement triggers over the transition tables: one upsert per inbox a statement touched
    // (row triggers updating one counter row per message made a 100,000-row insert 8 times
    // slower, each update a new version of the same row), in destination order, so that two
    // transactions lock counters in the same order.
    const apply = (changes: string) => `
      insert into inbox_counters as c (destination, pending, dead)
      select destination, sum(pending), sum(dead) from (${changes}) changes
      group by destination having sum(pending) <> 0 or sum(dead) <> 0 order by destination
      on conflict (destination) do update set pending = c.pending + excluded.pending, dead = c.dead + excluded.dead`;
    const counted = (table: string, sign: string) =>
      `select destination, ${sign}(state = 'pending')::int as pending, ${sign}(state = 'dead')::int as dead from ${table} where state in ('pending', 'dead')`;
    const triggers = [
      ['insert', 'new table as added', apply(counted('added', ''))],
      ['delete', 'old table as removed', apply(counted('removed', '-'))],
      ['update', 'old table as before new table as after', apply(`${counted('after', '')} union all ${counted('before', '-')}`)],
    ];
    for (const [event, transition, body] of triggers) {
      await sql
        .raw(`create function messages_count_inbox_${event}() returns trigger language plpgsql as $$ begin ${body}; return null; end $$`)
        .execute(db);
      await sql
        .raw(
          `create trigger messages_count_inbox_${event} after ${event} on messages referencing ${transition}
          for each statement execute function messages_count_inbox_${event}()`,
        )
        .execute(db);
    }
    return;
  }
  const upsert = (pending: string, dead: string, destination: string) => `
    insert into inbox_counters (destination, pending, dead) values (${destination}, ${pending}, ${dead})
    on conflict (destination) do update set pending = pending + excluded.pending, dead = dead + excluded.dead;`;
  await sql
    .raw(
      `create trigger messages_count_inbox_insert after insert on messages when new.state in ('pending', 'dead') begin
      ${upsert(`new.state = 'pending'`, `new.state = 'dead'`, 'new.destination')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger messages_count_inbox_update after update of state on messages
      when old.state <> new.state and (old.state in ('pending', 'dead') or new.state in ('pending', 'dead')) begin
      ${upsert(`(new.state = 'pending') - (old.state = 'pending')`, `(new.state = 'dead') - (old.state = 'dead')`, 'new.destination')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger messages_count_inbox_delete after delete on messages when old.state in ('pending', 'dead') begin
      ${upsert(`-(old.state = 'pending')`, `-(old.state = 'dead')`, 'old.destination')} end`,
    )
    .execute(db);
}
