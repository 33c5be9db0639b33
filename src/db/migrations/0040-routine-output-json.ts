import { sql, type Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * An execution's output becomes a JSON document (the agent's acknowledge output as it sent it,
 * or a failure's reason as a JSON string) instead of its text: the texts kept so far become
 * JSON strings, so nothing reads differently.
 */
export async function up(db: Kysely<unknown>, caps: DialectCapabilities): Promise<void> {
  const quoted = caps.kind === 'postgres' ? sql`to_json(output)::text` : sql`json_quote(output)`;
  await sql`UPDATE routine_executions SET output = ${quoted} WHERE output IS NOT NULL`.execute(db);
}
