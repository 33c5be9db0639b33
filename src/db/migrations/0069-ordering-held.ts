import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * Ordering keys by a flag: `held` marks a pending message that waits behind an earlier pending
 * one of its (destination, ordering key). The claim walks only free messages (the dequeue index
 * has `held` among its equality columns), where it probed each keyed candidate for an earlier
 * pending message of its key: with random priorities a key's later messages come before its head
 * in the dequeue order, and each was probed and skipped.
 *
 * Triggers keep the flag on every path: a new keyed message is held when an earlier message of its
 * key is pending; when a free message stops being pending (acked, dead, delivered at most once,
 * cancelled, deleted; a lease running out leaves it pending) the next pending one of its key is
 * freed. A held message that stops being pending keeps `held`, so a free one that stopped marks
 * the point before which none is pending: a send looks back only to the latest message of its key
 * that is pending or free.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  await db.schema
    .alterTable('messages')
    .addColumn('held', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  // Settled messages too: one settled while an earlier one was pending must not end a send's look back.
  await sql`update messages set held = true where ordering_key is not null and exists (
      select 1 from messages as earlier where earlier.destination = messages.destination
      and earlier.ordering_key = messages.ordering_key and earlier.state = 'pending' and earlier.seq < messages.seq)`.execute(db);
  // Free messages first in the claim's walk; held ones after them, in the same dequeue order.
  await db.schema.dropIndex('messages_inbox').execute();
  await db.schema
    .createIndex('messages_inbox')
    .on('messages')
    .columns(['destination', 'state', 'held', 'priority desc', 'fair_rank', 'seq'])
    .execute();
  // Without `state`, an ack leaves this index alone (it only dirtied a page per key acknowledged).
  await db.schema.dropIndex('messages_ordering').execute();
  await db.schema
    .createIndex('messages_ordering')
    .on('messages')
    .columns(['destination', 'ordering_key', 'seq'])
    .where(sql.ref('ordering_key'), 'is not', null)
    .execute();
  // Whether an earlier message of the key is pending: the latest one pending or free decides.
  const heldBehind = (row: string) => `coalesce((select earlier.state = 'pending' from messages as earlier
      where earlier.destination = ${row}.destination and earlier.ordering_key = ${row}.ordering_key
      and earlier.seq < ${row}.seq and (earlier.state = 'pending' or not earlier.held)
      order by earlier.seq desc limit 1), false)`;
  if (caps.kind === 'postgres') return postgres(db, heldBehind);
  await sql
    .raw(
      `create trigger messages_hold after insert on messages when new.ordering_key is not null and new.state = 'pending' begin
      update messages set held = true where seq = new.seq and ${heldBehind('new')}; end`,
    )
    .execute(db);
  // SQLite has one writer: the next pending message of the key is the one to free.
  const release = (name: string, event: string, when: string) =>
    sql
      .raw(
        `create trigger messages_advance_${name} after ${event} on messages
        when old.ordering_key is not null and old.state = 'pending' and not old.held ${when} begin
        update messages set held = false where seq = (select seq from messages as later
          where later.destination = old.destination and later.ordering_key = old.ordering_key
          and later.seq > old.seq and later.state = 'pending' order by later.seq limit 1); end`,
      )
      .execute(db);
  await release('update', 'update of state', `and new.state <> 'pending'`);
  await release('delete', 'delete', '');
}

/**
 * On PostgreSQL sends of a key wait for each other on a transaction lock (`orderingLocks`, taken
 * before the insert draws seq); the insert's own snapshot predates that wait, so the flag is set
 * by a BEFORE trigger, whose query takes a snapshot of its own after it. A settle takes the same
 * lock before it frees the next message, so a send racing with it either sees the settled message
 * gone or is seen by it. The settle locks its keys in the senders' order (by name, bytewise),
 * over the statement's transition tables, so a multi-row settle and a multi-key send never wait
 * on each other in a cycle. Statement triggers fire by name: messages_advance_* takes the key
 * locks before messages_count_inbox_* locks the inbox's counter row, the order a send takes them in.
 */
async function postgres(db: Kysely<unknown>, heldBehind: (row: string) => string): Promise<void> {
  await sql
    .raw(
      `create function messages_hold() returns trigger language plpgsql as $$ begin
        new.held := ${heldBehind('new')}; return new; end $$`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger messages_hold before insert on messages for each row
      when (new.ordering_key is not null and new.state = 'pending') execute function messages_hold()`,
    )
    .execute(db);
  const keys = (settled: string) =>
    `select destination, ordering_key, min(seq) as seq from (${settled}) as settled group by destination, ordering_key`;
  const next = (key: string) => `select later.seq from messages as later where later.destination = ${key}.destination
      and later.ordering_key = ${key}.ordering_key and later.seq > ${key}.seq and later.state = 'pending' order by later.seq limit 1`;
  // One statement frees every key's next message. A concurrent settle of a next message (an
  // expiry) makes the update skip it: then each key is looked at again, until one is freed.
  const release = (settled: string) => `declare locked bigint; nexts bigint[]; freed bigint; k record; next_seq bigint; begin
      select count(pg_advisory_xact_lock(hashtext(name))) into locked from (select distinct
        ('ordering:' || destination || ':' || ordering_key) collate "C" as name from (${settled}) as settled order by name) as names;
      if locked = 0 then return null; end if;
      nexts := array(select next from (select (${next('keys')}) as next from (${keys(settled)}) as keys) as found where next is not null);
      update messages set held = false where seq = any(nexts) and state = 'pending';
      get diagnostics freed = row_count;
      if freed = cardinality(nexts) then return null; end if;
      for k in ${keys(settled)} loop
        loop
          ${next('k')} into next_seq;
          exit when next_seq is null;
          update messages set held = false where seq = next_seq and state = 'pending';
          exit when found;
        end loop;
      end loop;
      return null; end`;
  const free = (row: string) => `${row}ordering_key is not null and ${row}state = 'pending' and not ${row}held`;
  const triggers = [
    [
      'update',
      'old table as before new table as after',
      `select b.destination, b.ordering_key, b.seq from before as b join after as a on a.seq = b.seq where ${free('b.')} and a.state <> 'pending'`,
    ],
    ['delete', 'old table as removed', `select destination, ordering_key, seq from removed where ${free('')}`],
  ];
  for (const [event, transition, settled] of triggers) {
    await sql.raw(`create function messages_advance_${event}() returns trigger language plpgsql as $$ ${release(settled!)} $$`).execute(db);
    await sql
      .raw(
        `create trigger messages_advance_${event} after ${event} on messages referencing ${transition} for each statement execute function messages_advance_${event}()`,
      )
      .execute(db);
  }
}
