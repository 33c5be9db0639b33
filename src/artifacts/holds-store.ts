import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import { Store } from '../db/store.js';

/** The SQL of claim-check holds (which message or run carries which offloaded artifact) and of the offloads not yet seen held. */
export class HoldsStore extends Store {
  async insertHolds(tx: Tx, rows: { artifact_id: string; holder: string; created_at: number }[]): Promise<void> {
    if (rows.length === 0) return;
    await dbOf(tx, this.db)
      .insertInto('artifact_holds')
      .values(rows)
      .onConflict((oc) => oc.columns(['artifact_id', 'holder']).doNothing())
      .execute();
  }

  /** Drops the holders' holds; answers the artifacts they held that no other holder holds now. */
  async dropHolders(tx: Tx, holders: readonly string[]): Promise<string[]> {
    if (holders.length === 0) return [];
    const db = dbOf(tx, this.db);
    const held = (
      await db
        .deleteFrom('artifact_holds')
        .where(this.caps.inTextList('holder', [...holders]))
        .returning('artifact_id')
        .execute()
    ).map((row) => row.artifact_id);
    if (held.length === 0) return [];
    const ids = [...new Set(held)];
    const still = new Set(
      (await db.selectFrom('artifact_holds').select('artifact_id').where(this.caps.inTextList('artifact_id', ids)).execute()).map(
        (row) => row.artifact_id,
      ),
    );
    return ids.filter((id) => !still.has(id));
  }

  async insertOffload(tx: Tx, row: { artifact_id: string; created_at: number }): Promise<void> {
    await dbOf(tx, this.db).insertInto('artifact_offloads').values(row).execute();
  }

  /** The oldest offloads made before `before`. */
  async offloadsBefore(tx: Tx, before: number, limit: number): Promise<string[]> {
    const rows = await dbOf(tx, this.db)
      .selectFrom('artifact_offloads')
      .select('artifact_id')
      .where('created_at', '<', before)
      .orderBy('created_at')
      .limit(limit)
      .execute();
    return rows.map((row) => row.artifact_id);
  }

  /** Forgets the offload (whoever deletes the row decides its fate); false when it was not one, or is decided. */
  async takeOffload(tx: Tx, artifactId: string): Promise<boolean> {
    const gone = await dbOf(tx, this.db).deleteFrom('artifact_offloads').where('artifact_id', '=', artifactId).executeTakeFirst();
    return Number(gone.numDeletedRows) > 0;
  }

  async isHeld(tx: Tx, artifactId: string): Promise<boolean> {
    const row = await dbOf(tx, this.db)
      .selectFrom('artifact_holds')
      .select('holder')
      .where('artifact_id', '=', artifactId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }
}
