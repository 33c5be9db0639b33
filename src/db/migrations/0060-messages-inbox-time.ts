import type { Kysely } from 'kysely';
import type { DialectCapabilities } from '../capabilities.js';

/**
 * An inbox's messages of each state in the order they were sent: its oldest waiting message is
 * the first pending one not in flight, a lookup instead of a walk over every message the inbox
 * holds (`/messaging/inboxes`, the inbox_age alert, the oldest-pending gauge); its dead letters
 * page newest first without a sort.
 */
export async function up(db: Kysely<unknown>, _caps: DialectCapabilities): Promise<void> {
  await db.schema.createIndex('messages_inbox_time').on('messages').columns(['destination', 'state', 'created_at']).execute();
}
