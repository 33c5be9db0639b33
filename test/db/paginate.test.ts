import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { paginate, paginateCompiled } from '../../src/db/paginate.js';
import { Statements } from '../../src/db/statements.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

describeEachDialect('paginate', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  // A scratch table outside the schema's types: the helper is generic over any query.
  const rows = () => (handle.db as any).selectFrom('paginate_probe').selectAll().orderBy('id');

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options());
    await handle.db.schema
      .createTable('paginate_probe')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .execute();
    for (let id = 1; id <= 7; id++)
      await handle.db
        .insertInto('paginate_probe' as never)
        .values({ id } as never)
        .execute();
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  it.each([
    { limit: 3, offset: 0, ids: [1, 2, 3] },
    { limit: 3, offset: 6, ids: [7] },
    { limit: 7, offset: 0, ids: [1, 2, 3, 4, 5, 6, 7] },
    { limit: 10, offset: 0, ids: [1, 2, 3, 4, 5, 6, 7] },
    { limit: 3, offset: 7, ids: [] },
    { limit: 3, offset: 50, ids: [] },
  ])('counts every row whatever the window ($limit at $offset)', async ({ limit, offset, ids }) => {
    const page = await paginate(rows(), { limit, offset });
    expect((page.items as { id: number }[]).map((r) => r.id)).toEqual(ids);
    expect(page.total).toBe(7);
  });

  it('says 0 for an empty list', async () => {
    const page = await paginate(rows().where('id', '>', 100), { limit: 5, offset: 0 });
    expect(page).toEqual({ items: [], total: 0 });
  });

  it.each([
    { limit: 7, offset: 0, counted: false },
    { limit: 1, offset: 6, counted: false },
    { limit: 6, offset: 0, counted: true },
    { limit: 3, offset: 9, counted: true },
  ])('counts only when the page does not reach the end ($limit at $offset)', async ({ limit, offset, counted }) => {
    let calls = 0;
    const page = await paginate(rows(), { limit, offset }, async () => {
      calls += 1;
      return 7;
    });
    expect(page.total).toBe(7);
    expect(page.items.length).toBeLessThanOrEqual(limit);
    expect(calls).toBe(counted ? 1 : 0);
  });

  it('takes a count of its own (GROUP BY queries count groups)', async () => {
    const page = await paginate(rows(), { limit: 2, offset: 0 }, async () => 42);
    expect(page.total).toBe(42);
  });

  it.each([
    { limit: 3, offset: 0, above: 0, ids: [1, 2, 3], total: 7 },
    { limit: 2, offset: 4, above: 0, ids: [5, 6], total: 7 },
    { limit: 2, offset: 1, above: 3, ids: [5, 6], total: 4 },
    { limit: 9, offset: 0, above: 3, ids: [4, 5, 6, 7], total: 4 },
    { limit: 2, offset: 9, above: 3, ids: [], total: 4 },
  ])(
    'pages a compiled query like a built one, binding its values on every run ($limit at $offset above $above)',
    async ({ limit, offset, above, ids, total }) => {
      const statements = new Statements(handle.db);
      let builds = 0;
      const build = (v: { above: number }) => {
        builds += 1;
        return rows().where('id', '>', v.above);
      };
      for (let run = 0; run < 2; run++) {
        const page = await paginateCompiled(handle.db, statements, 'probe', { above }, build, { limit, offset });
        expect((page.items as { id: number }[]).map((r) => r.id)).toEqual(ids);
        expect(page.total).toBe(total);
      }
      // The page once, and the count once when the page could not tell the total.
      expect(builds).toBeLessThanOrEqual(2);
      expect((await paginateCompiled(handle.db, statements, 'probe', { above: 6 }, build, { limit: 1, offset: 0 })).items).toEqual([
        { id: 7 },
      ]);
    },
  );

  if (dialect !== 'postgres') {
    it('compiles LIMIT as an expression, so the statement is not prepared again on every run', () => {
      expect(rows().limit(3).compile().sql).toMatch(/limit \+\?/);
    });
  }
});
