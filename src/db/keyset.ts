import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { InvalidRequest } from '../kernel/errors.js';

/** One column of a list's order: its reference in the query and its direction. */
export interface KeysetColumn {
  column: string;
  direction: 'asc' | 'desc';
  type: 'number' | 'string';
}

/**
 * The order of a list that pages by keyset: columns whose values, together, are unique (the
 * last is the row's id or position), so the row after a page is "the first past these values".
 */
export type Keyset = readonly KeysetColumn[];

type KeyValue = string | number;

const MAX_CURSOR_LENGTH = 512;

/** The cursor of `row` under `keyset`: its key values, as base64url JSON (opaque to clients). */
export function cursorOf(keyset: Keyset, row: Record<string, unknown>): string {
  const values = keyset.map(({ column }) => row[fieldOf(column)]);
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

/** The key values a cursor carries; a cursor this list could not have given is a 400. */
export function valuesOf(keyset: Keyset, cursor: string): KeyValue[] {
  const bad = () => InvalidRequest.field('cursor', "is not a cursor this list gave (take it from a page's meta.next_cursor)");
  if (cursor.length > MAX_CURSOR_LENGTH) throw bad();
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(values) || values.length !== keyset.length) throw bad();
  const fits = (value: unknown, i: number) =>
    keyset[i]!.type === 'string' ? typeof value === 'string' && value.length <= 200 : Number.isSafeInteger(value);
  if (!values.every(fits)) throw bad();
  return values as KeyValue[];
}

/**
 * The rows past `values` in the keyset's order: (a > x) or (a = x and b > y) or …, each
 * comparison turned for a descending column. Written out rather than as a row comparison
 * because directions may differ between columns.
 */
export function pastKeys<DB, TB extends keyof DB>(eb: ExpressionBuilder<DB, TB>, keyset: Keyset, values: KeyValue[]): Expression<SqlBool> {
  const ref = (i: number) => sql.ref(keyset[i]!.column);
  return eb.or(
    keyset.map(({ direction }, i) =>
      eb.and([...keyset.slice(0, i).map((_, j) => eb(ref(j), '=', values[j]!)), eb(ref(i), direction === 'asc' ? '>' : '<', values[i]!)]),
    ),
  );
}

function fieldOf(column: string): string {
  return column.slice(column.lastIndexOf('.') + 1);
}
