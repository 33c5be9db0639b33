import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { Statements } from '../../src/db/statements.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

describeEachDialect('statements compiled once per shape', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let statements: Statements;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.options());
    statements = new Statements(handle.db);
  });
  afterAll(async () => {
    await handle.close();
    await database.drop();
  });

  it('binds each run’s values by name, in the order the text places them', async () => {
    let builds = 0;
    const run = async (values: { low: number; high: number; label: string }) => {
      const query = statements.compiled('probe', values, (v) => {
        builds += 1;
        return sql<{
          label: string;
          width: number;
        }>`select cast(${v.label} as text) as label, cast(${v.high} as integer) - cast(${v.low} as integer) as width`;
      });
      return (await handle.db.executeQuery(query)).rows[0];
    };
    expect(await run({ low: 1, high: 10, label: 'a' })).toMatchObject({ label: 'a', width: 9 });
    // Keys in another order: the binding follows the text, not the object.
    expect(await run({ label: 'b', high: 5, low: 3 } as never)).toMatchObject({ label: 'b', width: 2 });
    expect(builds).toBe(1);
  });

  it('compiles another text for another shape', async () => {
    const one = statements.compiled('shape-one', { x: 1 }, (v) => sql`select ${v.x} as x`);
    const two = statements.compiled('shape-two', { x: 1 }, (v) => sql`select ${v.x} as x, 2 as y`);
    expect(one.sql).not.toBe(two.sql);
    expect(one.parameters).toEqual([1]);
  });

  it('takes a query builder as well as raw SQL', async () => {
    let builds = 0;
    const query = (label: string) =>
      statements.compiled('builder', { label }, (v) => {
        builds += 1;
        return handle.db.selectNoFrom((eb) => eb.cast<string>(eb.val(v.label), 'text').as('label'));
      });
    expect(query('a').sql).toBe(query('b').sql);
    expect(query('b').parameters).toEqual(['b']);
    expect((await handle.db.executeQuery(query('c'))).rows).toEqual([{ label: 'c' }]);
    expect(builds).toBe(1);
  });

  it('lists values and rows element by element, beside values bound whole', async () => {
    let builds = 0;
    const run = async (ids: string[], rows: { a: number; b: string; extra?: string }[], label: string) => {
      const query = statements.listed(
        `listed:${ids.length}:${rows.length}`,
        { ids, rows, label },
        (v) => {
          builds += 1;
          const picked = v.rows.map((row) => sql`select cast(${row.a} as integer) as a, cast(${row.b} as text) as b`);
          return sql<{ a: number; b: string; label: string; hit: number }>`
            select r.a, r.b, cast(${v.label} as text) as label,
              case when r.b in (${sql.join(v.ids)}) then 1 else 0 end as hit
            from (${sql.join(picked, sql` union all `)}) as r order by r.a`;
        },
        { rows: ['a', 'b'] },
      );
      return (await handle.db.executeQuery(query)).rows.map((row) => ({ ...row, hit: Number(row.hit) }));
    };
    expect(
      await run(
        ['x', 'z'],
        [
          { a: 1, b: 'x' },
          { a: 2, b: 'y' },
        ],
        'one',
      ),
    ).toEqual([
      { a: 1, b: 'x', label: 'one', hit: 1 },
      { a: 2, b: 'y', label: 'one', hit: 0 },
    ]);
    // Same lengths: the same text, bound anew; a field outside `columns` is not bound.
    expect(
      await run(
        ['y', 'q'],
        [
          { a: 3, b: 'y', extra: 'e' },
          { a: 4, b: 'w' },
        ],
        'two',
      ),
    ).toEqual([
      { a: 3, b: 'y', label: 'two', hit: 1 },
      { a: 4, b: 'w', label: 'two', hit: 0 },
    ]);
    expect(builds).toBe(1);
  });

  it('refuses a text that binds a value of its own, which later runs would not bind again', () => {
    expect(() =>
      statements.compiled('constant', { id: 'x' }, () => handle.db.selectFrom('api_keys').select('id').where('role', '=', 'admin')),
    ).toThrow(/not one of its named values/);
  });
});
