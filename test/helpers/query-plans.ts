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
