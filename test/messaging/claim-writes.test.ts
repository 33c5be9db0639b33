import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

/**
 * SQLite rewrites the entries of every index on a column an UPDATE sets, whether its value
 * changes or not, and fires its `update of` triggers by the same rule. Five indexes of messages
 * hold state, so a claim, which leaves a leased message pending, must not set it: only an
 * at-most-once message, settled as it is leased, has its state written. (PostgreSQL's claim is
 * one statement that sets state for every row; its planner writes index entries by value.)
 */
describe("messaging: a claim writes no state but an at-most-once message's [sqlite]", () => {
  const server = useServer('sqlite');

  it('fires an update-of-state trigger only for the at-most-once message among keyless and keyed ones', async () => {
    const db = server.app.platform.database.db;
    await sql`create table state_writes (id text not null)`.execute(db);
    await sql`create trigger state_written after update of state on messages begin insert into state_writes values (new.id); end`.execute(
      db,
    );
    const worker = await server.agent('claim-writes');
    const send = async (extra: Record<string, unknown>) => {
      const res = await server.api.post(`${M}/send`, { destination: 'claim-writes', event_name: 'job', ...extra });
      expect(res.status, res.text).toBe(201);
      return res.body.data.message_id as string;
    };
    for (const extra of [{}, {}, { ordering_key: 'k1' }, { ordering_key: 'k2' }, { priority: 9 }]) await send(extra);
    const once = await send({ delivery_semantic: 'at_most_once' });
    const got = await worker.get(`${M}/receive?max=10&timeout=0`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.messages).toHaveLength(6);
    const written = await sql<{ id: string }>`select id from state_writes`.execute(db);
    expect(written.rows.map((row) => row.id)).toEqual([once]);
  });
});
