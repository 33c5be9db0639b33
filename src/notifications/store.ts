import type { Selectable, Updateable } from 'kysely';
import { Store } from '../db/store.js';
import type { Tx } from '../kernel/tx.js';
import { dbOf } from '../db/tx.js';
import type { Page, Paged } from '../kernel/pagination.js';
import type { NotificationChannelsTable } from './tables.js';

export type ChannelRow = Selectable<NotificationChannelsTable>;

export class NotificationsStore extends Store {
  async insertChannel(tx: Tx, row: ChannelRow): Promise<void> {
    await dbOf(tx, this.db).insertInto('notification_channels').values(row).execute();
  }

  async findChannel(tx: Tx, id: string): Promise<ChannelRow | undefined> {
    return dbOf(tx, this.db).selectFrom('notification_channels').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** These channels, by id (the unknown ones are missing). */
  async findChannels(tx: Tx, ids: readonly string[]): Promise<Map<string, ChannelRow>> {
    if (ids.length === 0) return new Map();
    const rows = await dbOf(tx, this.db).selectFrom('notification_channels').selectAll().where(this.caps.inTextList('id', ids)).execute();
    return new Map(rows.map((row) => [row.id, row]));
  }

  /** The channel, its row locked until `tx` ends (PostgreSQL), so changes to it are serialized. */
  async lockChannel(tx: Tx, id: string): Promise<ChannelRow | undefined> {
    return this.caps.lock(dbOf(tx, this.db).selectFrom('notification_channels').selectAll().where('id', '=', id)).executeTakeFirst();
  }

  async listChannels(tx: Tx, window: Page): Promise<Paged<ChannelRow>> {
    return this.paginate(tx, dbOf(tx, this.db).selectFrom('notification_channels').selectAll().orderBy('id'), window);
  }

  async updateChannel(tx: Tx, id: string, changes: Updateable<NotificationChannelsTable>): Promise<void> {
    await dbOf(tx, this.db).updateTable('notification_channels').set(changes).where('id', '=', id).execute();
  }

  async deleteChannel(tx: Tx, id: string): Promise<boolean> {
    const result = await dbOf(tx, this.db).deleteFrom('notification_channels').where('id', '=', id).executeTakeFirst();
    return result.numDeletedRows > 0n;
  }
}
