import { sql, type InsertQueryBuilder, type InsertResult, type RawBuilder } from 'kysely';
import type { DialectCapabilities } from './capabilities.js';
import type { Db } from './database.js';
import type { Database } from './schema.js';
import { Statements, type Writer } from './statements.js';

/** Distinct row counts (or column shapes) whose INSERT text is kept. */
const MAX_TEXTS = 64;
// SQLite binds at most 32766 values per statement (PostgreSQL 65535).
const MAX_BOUND_VALUES = 32_766;
const MAX_CHUNK_ROWS = 1000;

type Table = keyof Database & string;
/** A row to insert: a value (or undefined, for NULL) per column of the template. */
export type BulkRow<K extends string> = { readonly [C in K]?: unknown };

export interface BulkInsertOptions<T extends Table> {
  /**
   * Send a batch column by column instead of value by value (see the class comment). Every
   * value of the rows must then be a string, a number or null.
   */
  columnar?: DialectCapabilities;
  /** What follows the rows: a conflict clause, RETURNING. */
  clauses?: (insert: InsertQueryBuilder<Database, T, InsertResult>) => Writer<unknown>;
}

/**
 * A multi-row INSERT whose SQL text Kysely compiles once per row count (through Statements,
 * a marker per value); later batches of that size bind their values straight into it.
 * Building and compiling a 500-row insert with the query builder took a sixth of a
 * send-batch's server time, and parsing the values of a cron burst's fires and executions a
 * tenth of the burst (profiled).
 *
 * Columnar (opt-in): a batch of more than one row travels as `INSERT … SELECT` from one array
 * parameter per column (`unnest`, PostgreSQL) or from one JSON text of the rows (`json_each`,
 * SQLite), and a column that holds the same value in every row as one parameter. The text
 * then depends on which columns vary, not on the row count: PostgreSQL no longer parses and
 * plans 23,000 parameters (2,000 inbox messages: 74 ms as VALUES, 27 ms from unnest), SQLite
 * no longer binds each value (and prepares no 23,000-parameter statement on a cold start).
 *
 * `template` has every column of `table`, each null: typed as a full record, so a column added
 * to the table cannot be left out; it fixes the columns every row is inserted with.
 */
export class BulkInsert<T extends Table, K extends string> {
  private readonly statements: Statements;
  private readonly columns: K[];
  private readonly chunkRows: number;
  private readonly caps: DialectCapabilities | null;
  private readonly clauses: (insert: InsertQueryBuilder<Database, T, InsertResult>) => Writer<unknown>;

  constructor(
    private readonly db: Db,
    private readonly table: T,
    template: Record<K, null>,
    options: BulkInsertOptions<T> = {},
  ) {
    this.statements = new Statements(db, { size: MAX_TEXTS });
    this.columns = Object.keys(template) as K[];
    this.chunkRows = Math.max(1, Math.min(MAX_CHUNK_ROWS, Math.floor(MAX_BOUND_VALUES / this.columns.length)));
    this.caps = options.columnar ?? null;
    this.clauses = options.clauses ?? ((insert) => insert);
  }

  /**
   * Inserts `rows` in `trx` (in chunks under the bound-value limit); returns what RETURNING gave.
   * `locks` (columnar on PostgreSQL): transaction locks the statement takes before it inserts a
   * row (`DialectCapabilities.takesTransactionLocks`), a row or more.
   */
  async run<Returned = unknown>(trx: Db, rows: readonly BulkRow<K>[], locks: readonly string[] = []): Promise<Returned[]> {
    const returned: Returned[] = [];
    for (const query of this.queries(rows, locks)) {
      for (const row of (await trx.executeQuery<Returned>(query)).rows) returned.push(row);
    }
    return returned;
  }

  /** Inserts `rows` in `trx`; returns how many went in (a conflict clause may leave some out). */
  async count(trx: Db, rows: readonly BulkRow<K>[]): Promise<number> {
    let inserted = 0;
    for (const query of this.queries(rows)) inserted += Number((await trx.executeQuery(query)).numAffectedRows ?? 0);
    return inserted;
  }

  private *queries(rows: readonly BulkRow<K>[], locks: readonly string[] = []) {
    if (this.caps !== null && (rows.length > 1 || locks.length > 0)) {
      yield this.columnar(this.caps, rows, locks);
      return;
    }
    if (locks.length > 0) throw new Error('BulkInsert: locks need a columnar insert');
    for (let i = 0; i < rows.length; i += this.chunkRows) {
      const chunk = rows.length <= this.chunkRows ? rows : rows.slice(i, i + this.chunkRows);
      yield this.statements.listed(
        `rows:${chunk.length}`,
        { rows: chunk },
        (v) => this.clauses(this.db.insertInto(this.table).values(v.rows as never)),
        { rows: this.columns },
      );
    }
  }

  /**
   * A columnar batch. Each column is either one value shared by every row (`c<i>`) or varying,
   * with the SQL type its values travel as (`unnest` needs it): an array parameter of its own
   * on PostgreSQL, a field of the rows' JSON text on SQLite.
   */
  private columnar(caps: DialectCapabilities, rows: readonly BulkRow<K>[], locks: readonly string[]) {
    const shapes: (string | null)[] = this.columns.map((column) => columnShape(rows, column));
    // Something must vary, or the SELECT would yield one row: the first column (an id) does.
    if (!shapes.some((shape) => shape !== null)) shapes[0] = columnType(rows, this.columns[0]!);
    const values: Record<string, unknown> = {};
    const varying: K[] = [];
    this.columns.forEach((column, i) => {
      if (shapes[i] === null) values[`c${i}`] = rows[0]![column];
      else if (caps.kind === 'postgres') values[`c${i}`] = rows.map((row) => row[column]);
      else varying.push(column);
    });
    if (locks.length > 0) values.locks = locks;
    if (caps.kind === 'sqlite') {
      const json = new Array<unknown[]>(rows.length);
      for (let r = 0; r < rows.length; r++) json[r] = varying.map((column) => rows[r]![column]);
      values.rows = JSON.stringify(json);
    }
    const shape = `${locks.length > 0 ? 'locked:' : ''}c:${shapes.map((s) => s ?? '=').join(',')}`;
    return this.statements.compiled(shape, values, (v) => this.columnarInsert(caps, v, shapes));
  }

  /** `INSERT … SELECT` over the columns' arrays (`unnest`) or the JSON rows (`json_each`). */
  private columnarInsert(caps: DialectCapabilities, v: Record<string, unknown>, shapes: (string | null)[]) {
    const exprs: RawBuilder<unknown>[] = [];
    let source;
    if (caps.kind === 'postgres') {
      const varying = shapes.flatMap((shape, i) => (shape === null ? [] : [i]));
      const arrays = varying.map((i) => sql`${v[`c${i}`]}::${sql.raw(shapes[i]!)}[]`);
      source = sql`unnest(${sql.join(arrays)})`.as(sql`u(${sql.join(varying.map((i) => sql.raw(`c${i}`)))})`);
      shapes.forEach((shape, i) => exprs.push(shape === null ? sql`${v[`c${i}`]}` : sql.ref(`u.c${i}`)));
    } else {
      let k = 0;
      source = sql`json_each(${v.rows})`.as('j');
      shapes.forEach((shape, i) => exprs.push(shape === null ? sql`${v[`c${i}`]}` : sql`j.value ->> ${sql.raw(String(k++))}`));
    }
    const select = this.db
      .selectFrom(source as never)
      .select(exprs.map((expr, i) => expr.as(`c${i}`)))
      // `where true`: SQLite would read a following ON CONFLICT as a join constraint.
      .where(v.locks === undefined ? sql<boolean>`true` : caps.takesTransactionLocks(v.locks));
    return this.clauses(
      this.db
        .insertInto(this.table)
        .columns(this.columns as never)
        .expression(select as never),
    );
  }
}

/** null when every row holds the same value in `column`; else the SQL type of its values. */
function columnShape<K extends string>(rows: readonly BulkRow<K>[], column: K): string | null {
  const first = rows[0]![column];
  for (let r = 1; r < rows.length; r++) if (rows[r]![column] !== first) return columnType(rows, column);
  return null;
}

function columnType<K extends string>(rows: readonly BulkRow<K>[], column: K): string {
  let type: string | null = null;
  for (const row of rows) {
    const value = row[column];
    if (value === null || value === undefined) continue;
    const t = typeof value === 'string' ? 'text' : typeof value === 'number' ? (Number.isInteger(value) ? 'int8' : 'float8') : null;
    if (t === null) throw new Error(`BulkInsert: column ${column} holds a ${typeof value}`);
    if (type === null || type === t) type = t;
    else if (type !== 'text' && t !== 'text') type = 'float8';
    else throw new Error(`BulkInsert: column ${column} holds both text and numbers`);
  }
  return type ?? 'text';
}
