/**
 * The patching behind test/helpers/open-handles.ts: timers, servers, child processes, worker
 * threads, pg pools and clients and better-sqlite3 Databases are tracked from the first import on.
 * It is a module of its own, not the setup file, because vitest evaluates a setup file again before
 * every test file while a worker's other modules stay loaded across files (`isolate: false`): the
 * prototypes and globals are patched once per worker, and each file's accounting starts at
 * `fileStarts()`.
 */
import net from 'node:net';
import { ChildProcess } from 'node:child_process';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import pg from 'pg';

/**
 * Resource types left to the snapshot. Timers are counted through the wrappers below instead:
 * vitest's own timer for the running hook is one too, and the wrappers can say where each was made.
 */
const DESCRIBED: Record<string, string> = {
  TCPServerWrap: 'a listening TCP server',
  TCPSocketWrap: 'a TCP socket (a client connection or an accepted one)',
  PipeWrap: 'a pipe (a child process stdio or a Unix socket)',
  ProcessWrap: 'a child process',
  UDPWrap: 'a UDP socket',
  FSEventWrap: 'a file watcher',
  StatWatcher: 'a file watcher (fs.watchFile)',
};

function countResources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const type of process.getActiveResourcesInfo()) if (type in DESCRIBED) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

/** The stack where something is opened; V8 formats it only if the thing leaks and `where` reads it. */
function openedAt(): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 12;
  const site = new Error('opened here');
  Error.stackTraceLimit = limit;
  return site;
}

/** ", opened at <the first frames of the test's or the app's code>" (else of a dependency's), or "". */
function where(site: Error): string {
  const frames = (site.stack ?? '')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().replace(/^at /, ''))
    .filter((line) => line.includes('/') && !/open-handles[\w-]*\.ts|\(node:|^node:/.test(line));
  const ours = frames.filter((line) => !line.includes('node_modules/'));
  const shown = (ours.length > 0 ? ours : frames).slice(0, 2);
  return shown.length > 0 ? `, opened at ${shown.join(' ← ')}` : '';
}

/** Things opened during this file that are not known to be closed, with what says whether they still are. */
const tracked = new Map<object, { what: () => string; open: () => boolean; site: Error }>();

function track(thing: object, what: () => string, open: () => boolean): void {
  if (!tracked.has(thing)) tracked.set(thing, { what, open, site: openedAt() });
}

// Timers: through the global functions, which is how the code under test makes them. Only the
// pending ones are held (a file makes thousands), each with where it was made.
export const realSetTimeout = globalThis.setTimeout;
const realSetInterval = globalThis.setInterval;
const realClearTimeout = globalThis.clearTimeout;
const realClearInterval = globalThis.clearInterval;
const timerSites = new WeakMap<NodeJS.Timeout, { what: string; site: Error }>();
const pendingTimers = new Set<NodeJS.Timeout>();

function made(timer: NodeJS.Timeout, kind: string, callback: unknown, ms: unknown): NodeJS.Timeout {
  const name = typeof callback === 'function' && callback.name ? callback.name : 'an anonymous function';
  timerSites.set(timer, { what: `a timer: ${kind}(${name}, ${String(ms ?? 0)})`, site: openedAt() });
  pendingTimers.add(timer);
  return timer;
}

const wrappedSetTimeout = function (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
  const timer: NodeJS.Timeout = realSetTimeout(
    function (this: unknown, ...values: unknown[]) {
      pendingTimers.delete(timer);
      return callback.apply(this, values);
    },
    ms,
    ...args,
  );
  return made(timer, 'setTimeout', callback, ms);
};
const wrappedSetInterval = function (callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) {
  return made(realSetInterval(callback, ms, ...args), 'setInterval', callback, ms);
};
// Keeps util.promisify(setTimeout) and the like working.
globalThis.setTimeout = Object.assign(wrappedSetTimeout, realSetTimeout) as typeof setTimeout;
globalThis.setInterval = Object.assign(wrappedSetInterval, realSetInterval) as typeof setInterval;
globalThis.clearTimeout = ((timer?: NodeJS.Timeout | string | number) => {
  if (timer !== null && typeof timer === 'object') pendingTimers.delete(timer);
  realClearTimeout(timer);
}) as typeof clearTimeout;
globalThis.clearInterval = ((timer?: NodeJS.Timeout | string | number) => {
  if (timer !== null && typeof timer === 'object') pendingTimers.delete(timer);
  realClearInterval(timer);
}) as typeof clearInterval;
const timerPrototype = Object.getPrototypeOf(realSetTimeout(() => undefined, 0)) as { close(): unknown; refresh(): unknown };
const { close: closeTimer, refresh: refreshTimer } = timerPrototype;
timerPrototype.close = function (this: NodeJS.Timeout) {
  pendingTimers.delete(this);
  return closeTimer.call(this);
};
timerPrototype.refresh = function (this: NodeJS.Timeout) {
  if (timerSites.has(this)) pendingTimers.add(this);
  return refreshTimer.call(this);
};

// Servers, child processes and worker threads: to name what the resource snapshot counts.
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
  track(
    this,
    () => {
      const address = this.address();
      return `a server listening on ${typeof address === 'string' ? address : address ? `${address.address}:${address.port}` : '?'}`;
    },
    () => this.listening,
  );
  return (listen as (...a: unknown[]) => net.Server).apply(this, args);
} as typeof listen;

// Every spawn, exec and fork goes through ChildProcess#spawn (Node's own, not in its typings).
const childPrototype = ChildProcess.prototype as unknown as { spawn(options: { file?: string; args?: string[] }): unknown };
const spawnChild = childPrototype.spawn;
childPrototype.spawn = function (this: ChildProcess, options) {
  const command = [...(options.args ?? [options.file ?? '?'])].join(' ').slice(0, 120);
  track(
    this,
    () => `a child process (pid ${this.pid}: ${command})`,
    () => this.exitCode === null && this.signalCode === null && this.pid !== undefined,
  );
  return spawnChild.call(this, options);
};

process.on('worker', (worker: Worker) => {
  let running = true;
  worker.once('exit', () => (running = false));
  track(
    worker,
    () => `a worker thread (id ${worker.threadId})`,
    () => running,
  );
});

// Database handles.
const pool = pg.Pool.prototype as unknown as { connect: (...args: unknown[]) => unknown };
const poolConnect = pool.connect;
pool.connect = function (this: pg.Pool, ...args: unknown[]) {
  track(
    this,
    () => `a pg pool (${this.totalCount} clients)`,
    () => !this.ended,
  );
  return poolConnect.apply(this, args);
};
// A client is closed once end() is called (its owner may then drop every 'end' listener, ours
// too), or once its connection ends by itself; its socket is the snapshot's to count.
const client = pg.Client.prototype as unknown as Record<'connect' | 'end', (...args: unknown[]) => unknown>;
const clientsEnded = new WeakSet<pg.Client>();
const { connect: clientConnect, end: clientEnd } = client;
client.connect = function (this: pg.Client, ...args: unknown[]) {
  this.once('end', () => clientsEnded.add(this));
  track(
    this,
    () => 'a pg client',
    () => !clientsEnded.has(this),
  );
  return clientConnect.apply(this, args);
};
client.end = function (this: pg.Client, ...args: unknown[]) {
  clientsEnded.add(this);
  return clientEnd.apply(this, args);
};

// A better-sqlite3 Database is used as soon as it is opened (pragmas, prepared statements).
const sqlite = Database.prototype as unknown as Record<'prepare' | 'exec' | 'pragma', (...args: unknown[]) => unknown>;
for (const method of ['prepare', 'exec', 'pragma'] as const) {
  const original = sqlite[method]!;
  sqlite[method] = function (this: Database.Database, ...args: unknown[]) {
    track(
      this,
      () => `a better-sqlite3 Database (${this.name})`,
      () => this.open,
    );
    return original.apply(this, args);
  };
}

/**
 * Where a test file's accounting starts: what is still tracked was opened by an earlier file of
 * the same worker, which has answered for it. Returns the resource counts to compare with.
 */
export function fileStarts(): Map<string, number> {
  tracked.clear();
  pendingTimers.clear();
  return countResources();
}

/** What is still open, or [] once everything the file opened is closed. */
export function leftOpen(before: Map<string, number>): string[] {
  const leaks: string[] = [];
  for (const timer of pendingTimers) {
    const { what, site } = timerSites.get(timer)!;
    if (timer.hasRef()) leaks.push(`${what}${where(site)}`);
  }
  for (const [thing, entry] of tracked) {
    if (entry.open()) leaks.push(`${entry.what()}${where(entry.site)}`);
    else tracked.delete(thing);
  }
  for (const [type, count] of countResources()) {
    const extra = count - (before.get(type) ?? 0);
    if (extra > 0) leaks.push(`${extra} × ${type}: ${DESCRIBED[type]}`);
  }
  return leaks;
}
