import { CompiledQuery } from 'kysely';
import { BoundedMap } from '../kernel/bounded-map.js';
import type { Db } from './database.js';

/** A statement's values by name; `build` places each one with `${v.name}`. */
export type Values<K extends string> = Record<K, unknown>;

/** Raw SQL (`sql\`…\``) or a query builder: what writes a statement's text. */
export interface Writer<R> {
  compile(db: Db): CompiledQuery<R>;
}

export interface StatementsOptions {
  /** Statement texts kept (one per shape; the one compiled longest ago goes first). */
  size?: number;
}

/**
 * Where each parameter of a compiled text comes from: `values[name]`, or for a listed value
 * `values[name][index]` (`[column]` when the list holds records). Parallel arrays: binding
 * 11,500 values of a 500-row insert reads them in one plain loop.
 */
interface Text {
  sql: string;
  names: string[];
  indexes: number[];
  columns: (string | undefined)[];
}

/**
 * THE compile-once mechanism: SQL texts compiled once per statement shape, bound by name on
 * every run, for a store's hottest statements. Kysely builds and compiles a query on every
 * call: for discovery's heartbeat upsert ~50 µs of builder and compiler against ~30 µs in
 * SQLite (profiled); for a claim while 2,000 long polls open, 21% of the server's CPU.
 */
export class Statements {
  private readonly texts: BoundedMap<string, Text>;

  constructor(
    private readonly db: Db,
    options: StatementsOptions = {},
  ) {
    this.texts = new BoundedMap(options.size ?? 512);
  }

  /**
   * The statement `build` writes, for these values. `shape` names everything else its text
   * depends on (inlined limits, optional clauses): one text is compiled per shape, with a
   * marker in place of each value, and each run binds the values in the markers' order.
   * `build` may write raw SQL or use the query builder; it must pass each value through as
   * it is (no arithmetic on it, no list a value expands into: see `listed`).
   */
  compiled<R, V extends Record<string, unknown>>(shape: string, values: V, build: (v: V) => Writer<R>): CompiledQuery<R> {
    const text = this.texts.get(shape) ?? this.compile(shape, values, build, {}, false);
    return this.bind(text, values);
  }

  /**
   * `compiled` for a statement that places lists of values: each array among `values` is a
   * list whose elements (a row's record, or a value of an `IN (…)` list) are bound one by one,
   * so `shape` must name every list's length. `build` gets each list as markers of the same
   * length: records whose fields are `columns[name]` (default: the first record's keys), or
   * single values. Values that are not arrays are bound whole, as in `compiled`.
   */
  listed<R, V extends Record<string, unknown>>(
    shape: string,
    values: V,
    build: (v: V) => Writer<R>,
    columns: { [K in keyof V]?: readonly string[] } = {},
  ): CompiledQuery<R> {
    const text = this.texts.get(shape) ?? this.compile(shape, values, build, columns as Record<string, readonly string[]>, true);
    return this.bind(text, values);
  }

  private compile<R, V extends Record<string, unknown>>(
    shape: string,
    values: V,
    build: (v: V) => Writer<R>,
    columns: Record<string, readonly string[] | undefined>,
    lists: boolean,
  ): Text {
    // Markers stand in for the values while the text is written.
    const markers: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(values)) {
      markers[name] = lists && Array.isArray(value) ? listMarkers(name, value, columns[name]) : new Marker(name);
    }
    const compiled = build(markers as V).compile(this.db);
    const text: Text = { sql: compiled.sql, names: [], indexes: [], columns: [] };
    for (const parameter of compiled.parameters) {
      // A constant the builder bound itself would be replayed as undefined on every run.
      if (!(parameter instanceof Marker)) throw new Error(`statement '${shape}' binds a value that is not one of its named values`);
      text.names.push(parameter.name);
      text.indexes.push(parameter.index);
      text.columns.push(parameter.column);
    }
    this.texts.set(shape, text);
    return text;
  }

  private bind<R>(text: Text, values: Record<string, unknown>): CompiledQuery<R> {
    const { names, indexes, columns } = text;
    const parameters = new Array<unknown>(names.length);
    for (let i = 0; i < names.length; i++) {
      const value = values[names[i]!];
      const index = indexes[i]!;
      if (index < 0) parameters[i] = value;
      else {
        const element = (value as unknown[])[index];
        const column = columns[i];
        parameters[i] = column === undefined ? element : (element as Record<string, unknown>)[column];
      }
    }
    return CompiledQuery.raw(text.sql, parameters) as CompiledQuery<R>;
  }
}

function listMarkers(name: string, list: readonly unknown[], columns: readonly string[] | undefined): unknown[] {
  const first = list[0];
  const keys = columns ?? (typeof first === 'object' && first !== null ? Object.keys(first) : undefined);
  return list.map((_, index) =>
    keys === undefined ? new Marker(name, index) : Object.fromEntries(keys.map((column) => [column, new Marker(name, index, column)])),
  );
}

class Marker {
  constructor(
    readonly name: string,
    readonly index = -1,
    readonly column?: string,
  ) {}
}
