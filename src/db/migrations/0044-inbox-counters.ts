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
    await sql`
      create function messages_count_inbox() returns trigger language plpgsql as $$
      declare
        pending_change bigint := 0;
        dead_change bigint := 0;
        inbox text;
      begin
        if tg_op <> 'INSERT' then
          pending_change := pending_change - (old.state = 'pending')::int;
          dead_change := dead_change - (old.state = 'dead')::int;
          inbox := old.destination;
        end if;
        if tg_op <> 'DELETE' then
          pending_change := pending_change + (new.state = 'pending')::int;
          dead_change := dead_change + (new.state = 'dead')::int;
          inbox := new.destination;
        end if;
        if pending_change <> 0 or dead_change <> 0 then
          insert into inbox_counters as c (destination, pending, dead) values (inbox, pending_change, dead_change)
          on conflict (destination) do update set pending = c.pending + excluded.pending, dead = c.dead + excluded.dead;
        end if;
        return null;
      end $$`.execute(db);
    await sql`
      create trigger messages_count_inbox after insert or delete or update of state on messages
      for each row execute function messages_count_inbox()`.execute(db);
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
