import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { BulkInsert, type BulkInsertOptions } from '../../src/db/bulk-insert.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

interface Probe {
  id: string;
  n: number | null;
  ratio: number | null;
  label: string | null;
}

const TEMPLATE: Record<keyof Probe, null> = { id: null, n: null, ratio: null, label: null };

describeEachDialect('BulkInsert', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  // A scratch table outside the schema's types.
  const insert = (options: Omit<BulkInsertOptions<never>, 'clauses'> & { clauses?: (insert: any) => any } = {}) =>
    new BulkInsert(handle.db, 'bulk_probe' as never, TEMPLATE, options as BulkInsertOptions<never>);
  const stored = async (): Promise<Probe[]> => {
    const { rows } = await sql<Probe>`select id, n, ratio, label from bulk_probe order by id`.execute(handle.db);
    return rows.map((row) => ({ ...row, n: row.n === null ? null : Number(row.n), ratio: row.ratio === null ? null : Number(row.ratio) }));
  };
  const probes = (count: number, from = 0, make: (i: number) => Partial<Probe> = () => ({})): Probe[] =>
    Array.from({ length: count }, (_, k) => {
      const i = from + k;
      return { id: `p${String(i).padStart(6, '0')}`, n: i, ratio: i / 4, label: `label ${i}`, ...make(i) };
    });

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    await handle.db.schema
      .createTable('bulk_probe')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('n', 'bigint')
      .addColumn('ratio', 'double precision')
      .addColumn('label', 'text')
      .execute();
  });
  beforeEach(async () => {
    await sql`delete from bulk_probe`.execute(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  it.each([1, 2, 999, 1000, 1001, 2500])('inserts %i rows value by value, in chunks of 1,000', async (count) => {
    const rows = probes(count);
    expect(await insert().count(handle.db, rows)).toBe(count);
    expect(await stored()).toEqual(rows);
  });

  it('binds each batch into the text of its row count', async () => {
    const bulk = insert();
    await bulk.run(handle.db, probes(3));
    await bulk.run(
      handle.db,
      probes(3, 3, (i) => ({ label: null, n: i * 10 })),
    );
    await bulk.run(handle.db, probes(1, 6));
    expect(await stored()).toEqual([...probes(3), ...probes(3, 3, (i) => ({ label: null, n: i * 10 })), ...probes(1, 6)]);
  });

  it('inserts columnar batches with varying and constant columns', async () => {
    const bulk = insert({ columnar: handle.caps });
    // label constant, ratio constant null, n varying with nulls.
    const first = probes(2000, 0, (i) => ({ label: 'same', ratio: null, n: i % 3 === 0 ? null : i }));
    expect(await bulk.count(handle.db, first)).toBe(2000);
    // Other columns vary now: another text, the same results.
    const second = probes(5, 2000, (i) => ({ n: 7, ratio: i === 2002 ? 0.5 : 2 }));
    expect(await bulk.count(handle.db, second)).toBe(5);
    const single = probes(1, 3000);
    expect(await bulk.count(handle.db, single)).toBe(1);
    expect(await stored()).toEqual([...first, ...second, ...single]);
  });

  it('inserts a columnar batch of rows alike but for their id, and of rows alike in every column', async () => {
    const bulk = insert({ columnar: handle.caps });
    const alike = probes(3, 0, () => ({ n: 1, ratio: 1, label: 'x' }));
    await bulk.run(handle.db, alike);
    expect(await stored()).toEqual(alike);
    // Nothing varies: the first column travels as a list anyway, so the SELECT yields every row.
    await handle.db.schema.createTable('bulk_plain').ifNotExists().addColumn('label', 'text').addColumn('n', 'bigint').execute();
    const plain = new BulkInsert(handle.db, 'bulk_plain' as never, { label: null, n: null }, { columnar: handle.caps });
    expect(
      await plain.count(handle.db, [
        { label: 'y', n: 2 },
        { label: 'y', n: 2 },
        { label: 'y', n: 2 },
      ]),
    ).toBe(3);
    const { rows } = await sql<{ label: string; n: number }>`select label, n from bulk_plain`.execute(handle.db);
    expect(rows.map((row) => [row.label, Number(row.n)])).toEqual([
      ['y', 2],
      ['y', 2],
      ['y', 2],
    ]);
  });

  it('refuses a columnar column that holds text and numbers', async () => {
    const rows = [...probes(1), { ...probes(1, 1)[0]!, label: 5 as never }];
    await expect(insert({ columnar: handle.caps }).run(handle.db, rows)).rejects.toThrow(/both text and numbers/);
  });

  it.each([
    { path: 'value by value', columnar: false },
    { path: 'columnar', columnar: true },
  ])('keeps conflict clauses and RETURNING ($path)', async ({ columnar }) => {
    const options = columnar ? { columnar: handle.caps } : {};
    const returning = insert({ ...options, clauses: (q) => q.onConflict((oc: any) => oc.column('id').doNothing()).returning('id') });
    await returning.run(handle.db, probes(3));
    const returned = await returning.run<{ id: string }>(handle.db, probes(5));
    expect(returned.map((row) => row.id).sort()).toEqual([probes(1, 3)[0]!.id, probes(1, 4)[0]!.id]);
    const counting = insert({ ...options, clauses: (q) => q.onConflict((oc: any) => oc.column('id').doNothing()) });
    expect(await counting.count(handle.db, probes(6))).toBe(1);
    expect(await stored()).toEqual(probes(6));
  });
});
