import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';

/** The file whose lock says a server serves from the data directory. */
export const LOCK_FILE = 'switchboard.lock';
/** Beside it, the holder's process id: only for the message of a refused start (the lock itself cannot be read by others). */
const HOLDER_FILE = 'switchboard.pid';

/** Another process holds the data directory's lock. */
export class DataDirInUse extends Error {}

export interface DataDirLock {
  release(): void;
}

/**
 * Takes the data directory for this process, or throws DataDirInUse. Two servers on one SQLite
 * file each believe they are alone (each only hears the other's writes when it polls the file),
 * so a second one must not start. The lock is SQLite's own on a database of its own, held in
 * EXCLUSIVE locking mode: the operating system drops it with the process however it ends, so a
 * killed server never blocks the next start, and there is no PID to trust or reuse.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.resolve(dataDir, LOCK_FILE);
  const holderFile = path.resolve(dataDir, HOLDER_FILE);
  const lock = new BetterSqlite3(file, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.pragma('journal_mode = MEMORY');
    // The first write takes the exclusive lock, which EXCLUSIVE mode keeps until the connection closes.
    lock.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); DELETE FROM holder; COMMIT');
  } catch (err) {
    lock.close();
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    const holder = readHolder(holderFile);
    throw new DataDirInUse(
      `another Switchboard server${holder ? ` (pid ${holder})` : ''} is serving from the data directory ${path.resolve(dataDir)}: ` +
        'stop it first, or give this one another SWITCHBOARD_DATA_DIR (or --data-dir)',
    );
  }
  fs.writeFileSync(holderFile, `${process.pid}\n`);
  return {
    release() {
      if (!lock.open) return;
      fs.rmSync(holderFile, { force: true });
      lock.close();
    },
  };
}

function readHolder(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
