import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { EventsStore } from '../../src/events/store.js';
import { autocommit } from '../../src/kernel/tx.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { planOf, QueryRecorder } from '../helpers/query-plans.js';

describeEachDialect('event log: a stream filtered by type reads through the (type, seq) index', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  const last = new QueryRecorder();
  let store: EventsStore;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options(2));
    await migrateToLatest(handle);
    store = new EventsStore(handle.db.withPlugin(last), handle.caps);
    // A log of 20,000 events, one in a hundred of the type the stream asks for.
    await sql`
      with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)
      insert into events (type, subject, actor, data, reason, readers, created_at)
      select case when i % 100 = 0 then 'task.created' else 'run.step' end, 'sub_' || i, 'admin', '{}', null,
             case when i % 2 = 0 then '["agent:a"]' else null end, i
      from n`.execute(handle.db);
    await sql`analyze`.execute(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  const planOfLast = () => planOf(handle, dialect, last.nodes[last.nodes.length - 1]!);

  it.each([
    ['one type, an admin', ['task.created'], undefined],
    ['one type, a reader', ['task.created'], ['agent:a', 'group:g']],
    ['types of a pattern, an admin', ['task.created', 'task.updated'], undefined],
    ['types of a pattern, a reader', ['task.created', 'task.updated'], ['agent:a', 'group:g']],
  ])('%s', async (_, types, readers) => {
    const rows = await store.readAfter(autocommit, { types, afterSeq: 5000, readers }, 100);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.type === 'task.created' && Number(row.seq) > 5000)).toBe(true);
    const plan = await planOfLast();
    expect(plan).toContain('events_type');
    if (dialect === 'postgres') expect(plan).not.toContain('Seq Scan');
    else expect(plan).not.toMatch(/SCAN events(?! USING)/);
  });
});
