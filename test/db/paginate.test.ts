import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Keyset } from '../../src/db/keyset.js';
import { InvalidRequest } from '../../src/kernel/errors.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { paginate as paginateIn, paginateCompiled } from '../../src/db/paginate.js';
import { EXACT_TOTAL_BOUND } from '../../src/kernel/pagination.js';
import { Statements } from '../../src/db/statements.js';
import type { PageOptions } from '../../src/db/paginate.js';
import type { Page } from '../../src/kernel/pagination.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

describeEachDialect('paginate', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  // A scratch table outside the schema's types: the helper is generic over any query.
  const rows = () => (handle.db as any).selectFrom('paginate_probe').selectAll().orderBy('id');
  const paginate = (query: any, window: Page, options?: PageOptions) => paginateIn(handle.caps, handle.db, query, window, options);

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
    const count = async () => {
      calls += 1;
      return 7;
    };
    const page = await paginate(rows(), { limit, offset }, { count });
    expect(page.total).toBe(7);
    expect(page.items.length).toBeLessThanOrEqual(limit);
    expect(calls).toBe(counted ? 1 : 0);
  });

  it('takes a count of its own (GROUP BY queries count groups)', async () => {
    const page = await paginate(rows(), { limit: 2, offset: 0 }, { count: async () => 42 });
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
  it.each([
    ['asc', [1, 2, 3, 4, 5, 6, 7]],
    ['desc', [7, 6, 5, 4, 3, 2, 1]],
  ] as const)('pages by cursor in %s order: each page starts after the last, the last page has no cursor', async (direction, ids) => {
    const keyset: Keyset = [{ column: 'id', direction, type: 'number' }];
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 5; pages++) {
      const page = await paginate((handle.db as any).selectFrom('paginate_probe').selectAll(), { limit: 3, offset: 0, cursor }, { keyset });
      expect(page.total).toBe(7);
      seen.push(...(page.items as { id: number }[]).map((r) => r.id));
      cursor = page.nextCursor;
      if (cursor === undefined) break;
    }
    expect(seen).toEqual(ids);
  });

  it('refuses a cursor it did not give, a cursor with an offset, and a cursor on a list without a keyset', async () => {
    const keyset: Keyset = [{ column: 'id', direction: 'asc', type: 'number' }];
    const probe = () => (handle.db as any).selectFrom('paginate_probe').selectAll();
    const other = Buffer.from(JSON.stringify([1, 2])).toString('base64url');
    for (const cursor of ['not-json', other, Buffer.from('[{"a":1}]').toString('base64url'), 'x'.repeat(600)]) {
      await expect(paginate(probe(), { limit: 3, offset: 0, cursor }, { keyset })).rejects.toBeInstanceOf(InvalidRequest);
    }
    const good = Buffer.from('[3]').toString('base64url');
    await expect(paginate(probe(), { limit: 3, offset: 2, cursor: good }, { keyset })).rejects.toBeInstanceOf(InvalidRequest);
    await expect(paginate(rows(), { limit: 3, offset: 0, cursor: good })).rejects.toBeInstanceOf(InvalidRequest);
  });

  it('pages by a keyset of mixed directions exactly as one ordered read (property)', async () => {
    await handle.db.schema
      .createTable('keyset_probe')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('a', 'integer', (c) => c.notNull())
      .addColumn('b', 'text', (c) => c.notNull())
      .execute();
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ a: fc.integer({ min: 0, max: 3 }), b: fc.constantFrom('x', 'y', 'z') }), { maxLength: 30 }),
        fc.constantFrom('asc', 'desc'),
        fc.constantFrom('asc', 'desc'),
        fc.integer({ min: 1, max: 7 }),
        async (values, aDirection, bDirection, limit) => {
          await sql`delete from keyset_probe`.execute(handle.db);
          for (const [id, row] of values.entries())
            await (handle.db as any)
              .insertInto('keyset_probe')
              .values({ id, ...row })
              .execute();
          const keyset: Keyset = [
            { column: 'a', direction: aDirection, type: 'number' },
            { column: 'b', direction: bDirection, type: 'string' },
            { column: 'id', direction: 'asc', type: 'number' },
          ];
          const probe = () => (handle.db as any).selectFrom('keyset_probe').selectAll();
          let whole = probe();
          for (const { column, direction } of keyset) whole = whole.orderBy(column, direction);
          const expected = (await whole.execute()).map((r: { id: number }) => r.id);
          const seen: number[] = [];
          let cursor: string | undefined;
          do {
            const page = await paginate(probe(), { limit, offset: 0, cursor }, { keyset });
            expect(page.total).toBe(values.length);
            seen.push(...(page.items as { id: number }[]).map((r) => r.id));
            cursor = page.nextCursor;
          } while (cursor !== undefined && seen.length <= values.length);
          expect(seen).toEqual(expected);
        },
      ),
      { numRuns: 40 },
    );
  });

  it(`counts exactly up to ${EXACT_TOTAL_BOUND} rows and estimates past it, never below what it saw`, async () => {
    await handle.db.schema
      .createTable('bound_probe')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .execute();
    const fill = (upTo: number) => sql`
      with recursive n(i) as (select 1 union all select i + 1 from n where i < ${upTo})
      insert into bound_probe (id) select i from n`;
    await fill(EXACT_TOTAL_BOUND).execute(handle.db);
    const probe = () => (handle.db as any).selectFrom('bound_probe').selectAll().orderBy('id');
    expect(await paginate(probe(), { limit: 5, offset: 0 })).toMatchObject({ total: EXACT_TOTAL_BOUND });
    expect((await paginate(probe(), { limit: 5, offset: 0 })).totalEstimated).toBeUndefined();
    await sql`delete from bound_probe`.execute(handle.db);
    await fill(EXACT_TOTAL_BOUND + 2_000).execute(handle.db);
    await sql`analyze bound_probe`.execute(handle.db);
    const first = await paginate(probe(), { limit: 5, offset: 0 });
    expect(first.totalEstimated).toBe(true);
    if (dialect === 'postgres') {
      // The planner's figure after analyze: close to the 12,000 rows.
      expect(first.total).toBeGreaterThan(EXACT_TOTAL_BOUND + 1_000);
      expect(first.total).toBeLessThan(EXACT_TOTAL_BOUND + 3_000);
    } else expect(first.total).toBe(EXACT_TOTAL_BOUND + 1);
    const deep = await paginate(probe(), { limit: 5, offset: EXACT_TOTAL_BOUND + 1_500 });
    expect(deep.total).toBeGreaterThanOrEqual(EXACT_TOTAL_BOUND + 1_506);
    // Filtered below the bound: exact again.
    const few = await paginate(probe().where('id', '>', EXACT_TOTAL_BOUND + 1_990), { limit: 5, offset: 0 });
    expect(few).toMatchObject({ total: 10 });
    expect(few.totalEstimated).toBeUndefined();
  });
});
