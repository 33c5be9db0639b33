import type { CreateTableBuilder, QueryExecutorProvider, RawBuilder, SelectQueryBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';

/**
 * Everything that differs between SQLite and PostgreSQL, in one object (house style: a
 * capability object per dialect instead of scattered `if (sqlite)`). Stores and migrations ask
 * it; services never see it.
 *
 * Shared storage conventions, so stores are written once:
 * - timestamps are epoch milliseconds in `bigint` columns (int8 is parsed to number on pg);
 * - JSON documents are `text` columns (serialize with JSON.stringify, parse on read);
 * - booleans are `integer` 0/1;
 * - raw bytes are `bytesType` columns, written and read as Buffers.
 */
export interface DialectCapabilities {
  readonly kind: 'sqlite' | 'postgres';
  /** `FOR UPDATE SKIP LOCKED` exists (PostgreSQL); SQLite serializes writers instead. */
  readonly skipLocked: boolean;
  /**
   * INSERT/UPDATE may run inside a `WITH` of another statement (PostgreSQL), so several writes
   * cost one round trip; SQLite runs them one by one (in process, a round trip is free).
   */
  readonly writableCte: boolean;
  /** The column type of raw bytes (read back as a Buffer on both). */
  readonly bytesType: 'blob' | 'bytea';
  /** Adds an auto-incrementing integer primary key column (a FIFO sequence). */
  serialPrimaryKey<T extends string, C extends string>(table: CreateTableBuilder<T, C>, column: string): CreateTableBuilder<T, C>;
  /** True when the error is a unique-constraint violation. */
  isUniqueViolation(err: unknown): boolean;
  /** True when the error is a foreign-key violation. */
  isForeignKeyViolation(err: unknown): boolean;
  /** True when the transaction lost a deadlock or serialization race and may simply be run again. */
  isTransientConflict(err: unknown): boolean;
  /**
   * Serializes transactions that take the same named lock until they end (an advisory
   * transaction lock on PostgreSQL; a no-op on SQLite, whose writers are serialized already).
   * Call it inside the transaction, with the transaction object.
   */
  transactionLock(trx: QueryExecutorProvider, name: string): Promise<void>;
  /**
   * A condition, always true, that takes `transactionLock` of each name (a text array value) in
   * the order given when the statement first evaluates it, before the statement produces a
   * row: the lock and the write in one statement. Sort the names: no deadlock. PostgreSQL only.
   */
  takesTransactionLocks(names: unknown): RawBuilder<SqlBool>;
  /**
   * `column IN (values)` with the whole list as one parameter (an array on PostgreSQL, a JSON
   * text on SQLite): one statement text whatever the count, and no bound-value limit.
   */
  inTextList(column: string, values: readonly string[]): RawBuilder<SqlBool>;
  /** True when the JSON array of strings in text `column` holds any of `values` (one parameter). */
  jsonArrayHoldsAny(column: string, values: readonly string[]): RawBuilder<SqlBool>;
  /**
   * A due-work query whose rows stay locked to this transaction, skipping rows another
   * transaction holds (`FOR UPDATE SKIP LOCKED`), so nodes claim different rows; unchanged on
   * SQLite, whose single writer claims alone.
   */
  claim<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** A query whose rows stay locked to this transaction (`FOR UPDATE`); unchanged on SQLite. */
  lock<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** How many rows the planner expects `query` to return (PostgreSQL); null where there is no planner estimate (SQLite). */
  estimatedRows<DB, TB extends keyof DB, O>(query: SelectQueryBuilder<DB, TB, O>): Promise<number | null>;
}

/** The time of a `min(…) as next` lookup of due work, or null when nothing is due. */
export function nextDue(row: { next: unknown } | undefined): number | null {
  return row?.next === null || row?.next === undefined ? null : Number(row.next);
}

function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
}

export const sqliteCapabilities: DialectCapabilities = {
  kind: 'sqlite',
  skipLocked: false,
  writableCte: false,
  bytesType: 'blob',
  serialPrimaryKey: (table, column) => table.addColumn(column, 'integer', (c) => c.primaryKey().autoIncrement()),
  isUniqueViolation: (err) => {
    const code = errorCode(err);
    return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
  },
  isForeignKeyViolation: (err) => errorCode(err) === 'SQLITE_CONSTRAINT_FOREIGNKEY',
  // Writers are serialized (BEGIN IMMEDIATE with a busy timeout): there is no deadlock to lose.
  isTransientConflict: () => false,
  transactionLock: async () => undefined,
  takesTransactionLocks: () => {
    throw new Error('SQLite takes no transaction locks: its writers are serialized');
  },
  inTextList: (column, values) => sql<SqlBool>`${sql.ref(column)} in (select value from json_each(${JSON.stringify(values)}))`,
  jsonArrayHoldsAny: (column, values) =>
    sql<SqlBool>`exists (select 1 from json_each(${sql.ref(column)}) where value in (select value from json_each(${JSON.stringify(values)})))`,
  claim: (query) => query,
  lock: (query) => query,
  estimatedRows: async () => null,
};

export const postgresCapabilities: DialectCapabilities = {
  kind: 'postgres',
  skipLocked: true,
  writableCte: true,
  bytesType: 'bytea',
  serialPrimaryKey: (table, column) => table.addColumn(column, 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity()),
  isUniqueViolation: (err) => errorCode(err) === '23505',
  isForeignKeyViolation: (err) => errorCode(err) === '23503',
  isTransientConflict: (err) => errorCode(err) === '40P01' || errorCode(err) === '40001',
  transactionLock: async (trx, name) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${name}))`.execute(trx);
  },
  // An uncorrelated subquery: evaluated once, before the first row (a one-time filter). A
  // function scan yields the array's elements in order, and the aggregate locks each in turn.
  takesTransactionLocks: (names) =>
    sql<SqlBool>`(SELECT count(pg_advisory_xact_lock(hashtext(name))) FROM unnest(${names}::text[]) AS name) >= 0`,
  inTextList: (column, values) => sql<SqlBool>`${sql.ref(column)} = any(${values}::text[])`,
  jsonArrayHoldsAny: (column, values) => sql<SqlBool>`(${sql.ref(column)}::jsonb ?| ${values}::text[])`,
  claim: (query) => query.forUpdate().skipLocked(),
  lock: (query) => query.forUpdate(),
  estimatedRows: async (query) => {
    const [row] = await query.explain<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }>('json');
    return row?.['QUERY PLAN'][0].Plan['Plan Rows'] ?? null;
  },
};

/** `now` in the stored format, for SQL-side defaults and comparisons in raw fragments. */
export const epochMs = (ms: number) => sql<number>`${ms}`;
