import { CompiledQuery, type KyselyPlugin, type RootOperationNode } from 'kysely';
import type { DatabaseHandle } from '../../src/db/database.js';
import type { Dialect } from './database.js';

/** Keeps the queries a store runs (through `db.withPlugin(recorder)`), so a test can ask for their plans. */
export class QueryRecorder implements KyselyPlugin {
  nodes: RootOperationNode[] = [];
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    this.nodes.push(node);
    return node;
  }
  async transformResult<R>({ result }: { result: R }): Promise<R> {
    return result;
  }
}

/** The database's plan of a recorded query, as JSON text (PostgreSQL's JSON plan; SQLite's query plan rows). */
export async function planOf(handle: DatabaseHandle, dialect: Dialect, node: RootOperationNode): Promise<string> {
  const compiled = handle.db.getExecutor().compileQuery(node, { queryId: 'plan' });
  const explain = dialect === 'postgres' ? 'explain (format json) ' : 'explain query plan ';
  const { rows } = await handle.db.executeQuery(CompiledQuery.raw(explain + compiled.sql, [...compiled.parameters]));
  return JSON.stringify(rows);
}

/** A parameter as an SQL literal (the values a store binds: text, numbers, null). */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return `'${String(value).replace(/'/g, "''")}'`;
}

/**
 * PostgreSQL's generic plan of a query as it was sent (JSON text): the plan a prepared statement falls
 * back to after five executions, chosen without its parameters' values, from the table's
 * statistics alone.
 */
export async function genericPlanOf(handle: DatabaseHandle, compiled: { sql: string; parameters: readonly unknown[] }): Promise<string> {
  return handle.db.connection().execute(async (conn) => {
    await conn.executeQuery(CompiledQuery.raw('set plan_cache_mode = force_generic_plan'));
    await conn.executeQuery(CompiledQuery.raw(`prepare generic_plan as ${compiled.sql}`));
    try {
      const args = compiled.parameters.map(literal).join(', ');
      const { rows } = await conn.executeQuery(CompiledQuery.raw(`explain (format json) execute generic_plan(${args})`));
      return JSON.stringify(rows);
    } finally {
      await conn.executeQuery(CompiledQuery.raw('deallocate generic_plan'));
      await conn.executeQuery(CompiledQuery.raw('reset plan_cache_mode'));
    }
  });
}
