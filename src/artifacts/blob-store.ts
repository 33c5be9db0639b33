import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, Writable, finished, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Tx } from '../kernel/tx.js';
import { PayloadTooLarge } from '../kernel/errors.js';
import { sha256Hex } from '../kernel/sha256.js';

/** An inclusive byte range of a blob. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Bytes written to the staging area, hashed, not yet visible under their key. `commit` makes
 * them visible, as part of the transaction `tx` where the store can (the chunked store) or at
 * once (a file's rename); `discard` removes what is left of the staged bytes, and does nothing
 * once a commit made them a stored content: call it whenever the work that was to commit them
 * failed. A content that fit the stage's inline limit was only held in memory: `inline` has it
 * whole, and commit and discard do nothing (the caller stores it elsewhere, e.g. in the database).
 */
export interface StagedBlob {
  readonly sha256: string;
  readonly size: number;
  readonly key: string;
  readonly inline: Buffer | null;
  /** True once commit has run (its transaction may still roll back: then discard cleans up). */
  readonly committed: boolean;
  commit(tx: Tx): Promise<void>;
  discard(): Promise<void>;
}

/**
 * Content-addressed blob storage. Callers stage a stream, then commit it inside
 * the database transaction that references it, so the bytes and their reference appear
 * together; the database counts references and tells the store when to delete (inside the
 * transaction that dropped the last one, holding the content's lock). Two implementations:
 * files under the data directory (FsBlobStore, the SQLite default) and chunks in PostgreSQL
 * (ChunkedBlobStore, cluster mode). An S3-compatible one would stage to a multipart upload and
 * commit by copying to the content's key.
 */
export interface BlobStore {
  /**
   * Streams `source` to a staging file, hashing while it goes; over `maxBytes` → 413, nothing
   * left behind. Up to `inlineMaxBytes` are held in memory first: a content no larger never
   * touches the disk (`inline`), a larger one spills to the file once it crosses that size.
   * A Buffer is a content in memory already.
   */
  stage(source: Readable | Buffer, maxBytes: number, inlineMaxBytes?: number): Promise<StagedBlob>;
  /** Opens the blob (optionally a range of it) for streaming; throws ENOENT when it is absent. */
  get(key: string, range?: ByteRange): Promise<Readable>;
  /** Deletes the blob as part of `tx` (where the store can); absent is not an error. */
  delete(tx: Tx, key: string): Promise<void>;
  /** Removes staging files untouched for longer than `olderThanMs` of wall-clock time (left by a crash). */
  sweepStaging(olderThanMs: number): Promise<number>;
  /** The keys of stored blobs untouched for longer than `olderThanMs` of wall-clock time. */
  storedBefore(olderThanMs: number): AsyncIterable<string>;
  /** Throws when the store cannot take contents now (GET /readyz): a directory gone or read-only. */
  check(): Promise<void>;
}

export const tooLarge = (maxBytes: number) => new PayloadTooLarge(`The upload exceeds the limit of ${maxBytes} bytes`);

/** Counts, hashes and bounds the bytes flowing through it. */
export class Meter extends Transform {
  readonly hash = createHash('sha256');
  size = 0;

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      callback(tooLarge(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    callback(null, chunk);
  }
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;

/**
 * Staging files are named `<pid>-<PROCESS_TAG>-<random>`: at startup, a file of another process
 * tag whose pid is gone, or is this process's own (a restarted container's server is often pid 1
 * again), was left by a crash. A live process's files (another server on this data directory)
 * are left to the age-based sweep.
 */
const PROCESS_TAG = randomBytes(4).toString('hex');

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user. Anything else (ESRCH, not a pid at all): gone.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function abandoned(stagingName: string): boolean {
  const [pid, tag] = stagingName.split('-');
  if (tag === PROCESS_TAG) return false;
  const writer = Number(pid);
  return writer === process.pid || !Number.isSafeInteger(writer) || writer <= 0 || !isRunning(writer);
}

/**
 * What every store's `stage` starts with: a content within `inlineMaxBytes` (a Buffer, or a
 * stream that ended within it) is held in memory and returned staged already; a larger one
 * comes back as the stream to write, from its first byte.
 */
export async function holdInline(source: Readable | Buffer, maxBytes: number, inlineMaxBytes: number): Promise<StagedBlob | Readable> {
  if (Buffer.isBuffer(source)) {
    if (source.length > maxBytes) throw tooLarge(maxBytes);
    if (source.length <= inlineMaxBytes) return inMemory(source);
    return Readable.from([source]);
  }
  if (inlineMaxBytes > 0) {
    const held = await holdSmall(source, inlineMaxBytes, maxBytes);
    if (held !== null) return inMemory(held);
  }
  return source;
}

/**
 * Streams `source` through `meter` into `sink`. Piped, not a stage of the pipeline: on an error
 * pipeline() destroys every stream in it, and a server request destroyed leaves the rest of its
 * body unread, so closing the connection resets it under the 413 (see http/lingering-close.ts).
 * A source that fails or ends early (an aborted request) still fails the pipeline through its
 * meter. On failure the source is left paused.
 */
export async function meterInto(source: Readable, meter: Meter, sink: Writable): Promise<void> {
  const unwatch = finished(source, (err) => {
    if (err) meter.destroy(err);
  });
  source.pipe(meter);
  try {
    await pipeline(meter, sink);
  } catch (err) {
    source.unpipe(meter);
    source.pause();
    throw err;
  } finally {
    unwatch();
  }
}

/** Flush to disk in the background after this many bytes, so the sync at the end is short. */
const SYNC_EVERY_BYTES = 64 * 1024 * 1024;

/** The staged form of a content held whole in memory: nothing to commit or discard. */
function inMemory(bytes: Buffer): StagedBlob {
  const sha256 = sha256Hex(bytes);
  return { sha256, size: bytes.length, key: sha256, inline: bytes, committed: false, commit: async () => {}, discard: async () => {} };
}

/**
 * Reads `source` into memory while it stays within `inlineMaxBytes`: resolves with the whole
 * content when it ended within that, or with null once it crossed it, the bytes read so far
 * put back at the head of the (paused) source so that it can be piped from its start. Over
 * `maxBytes` → 413 at once, the source left paused, not destroyed: a server request destroyed
 * leaves the rest of its body unread, and closing the connection then resets it under the 413;
 * the HTTP layer reads and drops the rest instead (http/lingering-close.ts). Plain listeners
 * rather than pipeline(): for a 4 KiB upload the pipeline of the file path cost ~170 µs of CPU
 * (its AbortController, end-of-stream tracking and Transform), a third of a whole create
 * request (measured, see bench/RESULTS.md).
 */
function holdSmall(source: Readable, inlineMaxBytes: number, maxBytes: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const held: Buffer[] = [];
    let size = 0;
    const settle = (outcome: () => void) => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      source.off('close', onClose);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      held.push(chunk);
      size += chunk.length;
      if (size > maxBytes) {
        settle(() => {
          source.pause();
          reject(tooLarge(maxBytes));
        });
      } else if (size > inlineMaxBytes) {
        settle(() => {
          source.pause();
          source.unshift(Buffer.concat(held, size));
          resolve(null);
        });
      }
    };
    const onEnd = () => settle(() => resolve(Buffer.concat(held, size)));
    const onError = (err: Error) => settle(() => reject(err));
    const onClose = () => settle(() => reject(new Error('The upload ended before its last byte')));
    source.on('data', onData);
    source.on('end', onEnd);
    source.on('error', onError);
    source.on('close', onClose);
  });
}

/**
 * Writes a stream to a file and, when `durable`, makes it reach the disk: data is flushed in
 * the background every 64 MiB while the upload is still arriving (one flush in flight at a
 * time), then once more at the end. A single flush at the end of a 1 GiB upload made the
 * client wait ~1.5 s for the disk after the last byte (benchmarked: 253 MiB/s with it).
 */
class FileSink extends Writable {
  private unsynced = 0;
  private syncing: Promise<void> | null = null;
  private released = false;

  constructor(
    private readonly handle: fsp.FileHandle,
    private readonly durable: boolean,
  ) {
    super({ highWaterMark: 1024 * 1024 });
  }

  private async append(chunks: Buffer[]): Promise<void> {
    await this.handle.writev(chunks);
    if (!this.durable) return;
    for (const chunk of chunks) this.unsynced += chunk.length;
    if (this.unsynced >= SYNC_EVERY_BYTES && this.syncing === null) {
      this.unsynced = 0;
      this.syncing = this.handle.datasync().finally(() => {
        this.syncing = null;
      });
    }
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (err?: Error | null) => void): void {
    this.append([chunk]).then(() => callback(), callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (err?: Error | null) => void): void {
    this.append(chunks.map((c) => c.chunk)).then(() => callback(), callback);
  }

  override _final(callback: (err?: Error | null) => void): void {
    (async () => {
      await this.syncing;
      if (this.durable) await this.handle.datasync();
      this.released = true;
      await this.handle.close();
    })().then(() => callback(), callback);
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (this.released) return callback(err);
    this.released = true;
    // Let a background flush settle before closing the descriptor under it.
    Promise.resolve(this.syncing)
      .catch(() => undefined)
      .then(() => this.handle.close())
      .then(
        () => callback(err),
        () => callback(err),
      );
  }
}

/**
 * Blobs as files under `<root>/sha256/ab/<sha256>`, staged in `<root>/tmp` on the same file
 * system so that commit is one atomic rename: a crash leaves either no file or a complete one,
 * never a half-written blob under its key.
 */
export class FsBlobStore implements BlobStore {
  private readonly staging: string;
  private readonly objects: string;
  private readonly madeDirs = new Set<string>();

  constructor(
    root: string,
    /** Flush the data to disk before the rename, so a power loss cannot leave a named but incomplete file. */
    private readonly durable = true,
  ) {
    this.staging = path.join(root, 'tmp');
    this.objects = path.join(root, 'sha256');
    fs.mkdirSync(this.staging, { recursive: true });
    fs.mkdirSync(this.objects, { recursive: true });
    // At startup, before any upload of this process: a crash leaves partial uploads behind
    // (322 MB after 5 kills under load), and waiting for the age-based sweep kept them an hour.
    for (const name of fs.readdirSync(this.staging)) {
      if (abandoned(name)) fs.rmSync(path.join(this.staging, name), { force: true, recursive: true });
    }
  }

  pathOf(key: string): string {
    if (!SHA256_HEX.test(key)) throw new Error(`not a blob key: ${key}`);
    return path.join(this.objects, key.slice(0, 2), key);
  }

  async check(): Promise<void> {
    await Promise.all([this.staging, this.objects].map((dir) => fs.promises.access(dir, fs.constants.W_OK)));
  }

  async stage(input: Readable | Buffer, maxBytes: number, inlineMaxBytes = 0): Promise<StagedBlob> {
    const source = await holdInline(input, maxBytes, inlineMaxBytes);
    if (!(source instanceof Readable)) return source;
    const staging = path.join(this.staging, `${process.pid}-${PROCESS_TAG}-${randomBytes(8).toString('hex')}`);
    const meter = new Meter(maxBytes);
    const sink = new FileSink(await fsp.open(staging, 'wx'), this.durable);
    try {
      await meterInto(source, meter, sink);
    } catch (err) {
      await fsp.rm(staging, { force: true });
      throw err;
    }
    const sha256 = meter.hash.digest('hex');
    const final = this.pathOf(sha256);
    let settled = false;
    let committed = false;
    return {
      sha256,
      size: meter.size,
      key: sha256,
      inline: null,
      get committed() {
        return committed;
      },
      // Synchronous on purpose: commit runs inside the database transaction that references
      // the blob (holding its lock), and on SQLite that transaction holds the only connection;
      // an async call would queue behind other requests' file I/O in libuv's 4-thread pool
      // while the connection sits idle. A rename of a new name takes microseconds.
      commit: async () => {
        if (settled) return;
        const dir = path.dirname(final);
        if (!this.madeDirs.has(dir)) {
          fs.mkdirSync(dir, { recursive: true });
          this.madeDirs.add(dir);
        }
        // The same bytes are stored already (and cannot vanish: deletes take the same lock).
        // Renaming over them would be correct, but ext4 flushes the replacing file's data on
        // such a rename: ~1 ms per rename in a CPU profile of 4 KiB creates of one content,
        // the largest single cost, spent while holding the database connection.
        if (fs.existsSync(final)) fs.rmSync(staging, { force: true });
        else fs.renameSync(staging, final);
        settled = true;
        committed = true;
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await fsp.rm(staging, { force: true });
      },
    };
  }

  async get(key: string, range?: ByteRange): Promise<Readable> {
    const handle = await fsp.open(this.pathOf(key), 'r');
    // The stream owns the handle and closes it on end, error or destroy.
    return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
  }

  /** Synchronous for the reason given at commit: it runs inside the transaction that dropped the last reference. */
  async delete(_tx: Tx, key: string): Promise<void> {
    fs.rmSync(this.pathOf(key), { force: true });
  }

  /** Every stored blob's key (`switchboard blobs migrate` moves them all). */
  stored(): AsyncIterable<string> {
    return this.storedBefore(Number.NEGATIVE_INFINITY);
  }

  async *storedBefore(olderThanMs: number): AsyncIterable<string> {
    const before = Date.now() - olderThanMs;
    for (const dir of await fsp.readdir(this.objects)) {
      const names = await fsp.readdir(path.join(this.objects, dir)).catch(() => []);
      for (const name of names) {
        if (!SHA256_HEX.test(name)) continue;
        const stat = await fsp.stat(path.join(this.objects, dir, name)).catch(() => null);
        if (stat && stat.mtimeMs < before) yield name;
      }
    }
  }

  async sweepStaging(olderThanMs: number): Promise<number> {
    // File times are wall-clock times, so this compares with the wall clock, not the app's Clock.
    const now = Date.now();
    let removed = 0;
    for (const name of await fsp.readdir(this.staging)) {
      const file = path.join(this.staging, name);
      const stat = await fsp.stat(file).catch(() => null);
      if (stat && now - stat.mtimeMs > olderThanMs) {
        await fsp.rm(file, { force: true });
        removed++;
      }
    }
    return removed;
  }
}
