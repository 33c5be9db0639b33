/**
 * What a failure of the storage underneath means for a client, decided in one place: the
 * database cannot be reached or is going away (retry shortly: 503), or there is no space left
 * to write (507). Anything else is a bug (500). http/error-handler.ts maps these.
 */
export type StorageFault = 'unavailable' | 'full';

// Errno codes of a connection to PostgreSQL that failed or broke, and of a write with no space.
const UNREACHABLE_ERRNO = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
const NO_SPACE_ERRNO = new Set(['ENOSPC', 'EDQUOT']);

/**
 * PostgreSQL SQLSTATEs: 08xxx connection exceptions; 57P01–57P03 the server shutting down or
 * starting; 53000/53200/53300 out of resources (connections, memory). 53100 is a full disk.
 */
const PG_UNAVAILABLE = /^(08...|57P0[1-3]|53[023]00)$/;
const PG_DISK_FULL = '53100';

/** node-postgres and its pool report a lost or impossible connection with these messages and no code. */
const PG_CONNECTION_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
];

export function storageFault(err: unknown): StorageFault | null {
  if (typeof err !== 'object' || err === null) return null;
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    // SQLite turns ENOSPC into SQLITE_FULL; SQLITE_IOERR_* is any other failed read or write,
    // SQLITE_BUSY another process holding the write lock past the driver's wait.
    if (code === 'SQLITE_FULL' || code === PG_DISK_FULL || NO_SPACE_ERRNO.has(code)) return 'full';
    if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_BUSY')) return 'unavailable';
    if (UNREACHABLE_ERRNO.has(code) || PG_UNAVAILABLE.test(code)) return 'unavailable';
  }
  if (typeof message === 'string' && PG_CONNECTION_MESSAGES.some((known) => message.startsWith(known))) return 'unavailable';
  // Connecting to a name with several addresses fails with one error per address.
  if (err instanceof AggregateError) {
    const faults = err.errors.map(storageFault);
    return faults.includes('full') ? 'full' : faults.every((fault) => fault === 'unavailable') && faults.length > 0 ? 'unavailable' : null;
  }
  return null;
}

/**
 * Whether storage is full, as the writes see it: full from a write refused for lack of space
 * until a write succeeds again. /readyz reports it: reads still work on a full disk, so a ping
 * cannot tell. Listeners hear when there is room again (postponed writes are tried then).
 */
export class StorageFullness {
  private isFull = false;
  private readonly roomListeners = new Set<() => void>();

  get full(): boolean {
    return this.isFull;
  }

  /** A write was refused for lack of space. */
  markFull(): void {
    this.isFull = true;
  }

  /** A write succeeded: there is room again. */
  markRoom(): void {
    if (!this.isFull) return;
    this.isFull = false;
    for (const listener of this.roomListeners) listener();
  }

  onRoom(listener: () => void): () => void {
    this.roomListeners.add(listener);
    return () => this.roomListeners.delete(listener);
  }
}
