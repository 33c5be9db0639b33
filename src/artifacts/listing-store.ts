import { setImmediate as nextTurn } from 'node:timers/promises';
import { sql, type Expression, type ExpressionBuilder, type Selectable, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';
import type { Database } from '../db/schema.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { containmentTest, type ContainmentTest } from './metadata-containment.js';
import type { ArtifactsTable } from './tables.js';

/** Who lists: an admin sees everything; an agent what it owns or is shared with it directly or through a group. */
export interface Viewer {
  admin: boolean;
  agentId: string | null;
  groups: string[];
}

export interface ArtifactFilter {
  content_type?: string;
  /** A JSON object the artifact's metadata must contain (PostgreSQL `@>` semantics). */
  metadata?: Record<string, unknown>;
}

type ArtifactRow = Selectable<ArtifactsTable>;
type ArtifactsEb = ExpressionBuilder<Database, 'artifacts'>;

/**
 * The SQL that lists artifacts: which ones a viewer may see (owned, or shared with it or one of
 * its groups), filtered by content type and by metadata containment, which PostgreSQL answers
 * with jsonb and SQLite by scanning in batches.
 */
export class ArtifactListingStore extends Store {
  async list(tx: Tx, viewer: Viewer, filter: ArtifactFilter, window: Page): Promise<Paged<ArtifactRow>> {
    let query = dbOf(tx, this.db).selectFrom('artifacts').selectAll().orderBy('id');
    if (!viewer.admin) query = query.where((eb) => eb.or([eb('owner', '=', viewer.agentId ?? ''), sharedWith(eb, viewer)]));
    const type = filter.content_type;
    if (type !== undefined) {
      if (type.endsWith('/*')) {
        // 'text/*' → every type from 'text/' up to 'text0' ('0' follows '/'): a range on the index.
        const major = type.slice(0, -1);
        query = query.where('content_type', '>=', major).where('content_type', '<', `${major.slice(0, -1)}0`);
      } else {
        query = query.where('content_type', '=', type);
      }
    }
    const wanted = filter.metadata;
    if (wanted === undefined) return this.paginate(tx, query, window);
    if (this.caps.kind === 'postgres') {
      return this.paginate(
        tx,
        query.where(sql<SqlBool>`${postgresJsonb(sql.ref('artifacts.metadata'))} @> ${JSON.stringify(wanted)}::jsonb`),
        window,
      );
    }
    return scanPages(query, containmentTest(wanted), window);
  }

  /** Artifacts shared with the viewer (directly or through a group) that it does not own. */
  async listShared(tx: Tx, viewer: Viewer, window: Page): Promise<Paged<ArtifactRow>> {
    const query = dbOf(tx, this.db)
      .selectFrom('artifacts')
      .selectAll()
      .where((eb) => sharedWith(eb, viewer))
      .where('owner', '!=', viewer.agentId ?? '')
      .orderBy('id');
    return this.paginate(tx, query, window);
  }
}

/** The non-owner part of read access: a share to the agent, or to one of its groups. */
function sharedWith(eb: ArtifactsEb, viewer: Viewer): Expression<SqlBool> {
  const shareExists = (kind: 'agent' | 'group', principals: string[]) =>
    eb.exists(
      eb
        .selectFrom('artifact_shares')
        .select(sql.lit(1).as('one'))
        .whereRef('artifact_shares.artifact_id', '=', 'artifacts.id')
        .where('artifact_shares.kind', '=', kind)
        .where('artifact_shares.principal', 'in', principals),
    );
  const conditions: Expression<SqlBool>[] = [];
  if (viewer.agentId !== null) conditions.push(shareExists('agent', [viewer.agentId]));
  if (viewer.groups.length > 0) conditions.push(shareExists('group', viewer.groups));
  return conditions.length === 0 ? sql<SqlBool>`1 = 0` : eb.or(conditions);
}

const ESCAPED_BACKSLASH = sql.lit('\\\\');
const ESCAPED_NUL = sql.lit('\\u0000');

/**
 * JSON text as jsonb on PostgreSQL, which cannot hold a NUL: metadata stored before NUL was
 * refused at validation has one (escaped as \u0000), and casting it failed every filter for
 * every caller. Such a text (rare: found by strpos) is cast with its NULs as U+FFFD. Escaped
 * backslashes are set aside first (as \x01, which JSON text never holds raw), so that a
 * backslash followed by "u0000" in a string stays text.
 */
function postgresJsonb(text: Expression<string>): Expression<unknown> {
  const withoutNul = sql`replace(replace(replace(${text}, ${ESCAPED_BACKSLASH}, chr(1)), ${ESCAPED_NUL}, ${sql.lit('\\ufffd')}), chr(1), ${ESCAPED_BACKSLASH})`;
  return sql`(CASE WHEN strpos(${text}, ${ESCAPED_NUL}) = 0 THEN ${text}::jsonb ELSE (${withoutNul})::jsonb END)`;
}

/** Rows read per query by `scanPages`. */
const SCAN_BATCH = 100;
/** Metadata text parsed between two yields of the event loop by `scanPages` (~1 ms of JSON.parse). */
const SCAN_TURN_CHARS = 256 * 1024;

/**
 * One page of `query`'s artifacts whose metadata passes `matches`, and how many pass in all, on
 * SQLite: the rows are read in batches along the id order and their metadata tested in
 * JavaScript, yielding the event loop between batches and every SCAN_TURN_CHARS of metadata.
 * SQLite runs in this process and blocks it while a statement runs: the filter as one statement
 * (a correlated json_each per filter value and level, each re-parsing its part of the JSON text)
 * held it for 6.1 s for a 20-object filter over 1,000 artifacts with 300-element arrays, and
 * /healthz waited as long (measured).
 */
async function scanPages(
  query: SelectQueryBuilder<Database, 'artifacts', ArtifactRow>,
  matches: ContainmentTest,
  window: Page,
): Promise<Paged<ArtifactRow>> {
  const items: ArtifactRow[] = [];
  let total = 0;
  let after = '';
  let parsedChars = 0;
  for (;;) {
    const rows = await query.where('id', '>', after).limit(SCAN_BATCH).execute();
    for (const row of rows) {
      parsedChars += row.metadata.length;
      if (parsedChars > SCAN_TURN_CHARS) {
        parsedChars = 0;
        await nextTurn();
      }
      if (!matches(JSON.parse(row.metadata))) continue;
      if (total >= window.offset && items.length < window.limit) items.push(row);
      total++;
    }
    if (rows.length < SCAN_BATCH) return { items, total };
    after = rows[rows.length - 1]!.id;
    await nextTurn();
  }
}
