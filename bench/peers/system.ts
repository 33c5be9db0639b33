/**
 * The one interface every system of the peers bench (issue 27) implements, and what adapters
 * share: the 1 KB payload that carries its send time, the reachability check, and the broker
 * processes whose CPU the suite reads from /proc. Adding a system is one file exporting a
 * `PeerSystem` factory, listed in bench/peers.ts.
 */
import fs from 'node:fs';
import net from 'node:net';
import pg from 'pg';
import { postgresTestUrl } from '../../test/helpers/database.js';

/** Processes whose CPU is charged to a system, under one label (e.g. `node`, `postgres`). */
export interface ProcessGroup {
  readonly label: string;
  readonly pids: number[];
}

/** One queue (destination) of a system: made fresh for each measurement. */
export interface PeerQueue {
  /** Sends the payloads: one message per call when there is one, else as the system's batch. Resolves once the system has them durably (its acknowledgement). */
  send(payloads: string[]): Promise<void>;
  /** Consumes until the returned stop is called, acknowledging each message; `onMessage` gets the send time (performance.now() ms) the payload carries. */
  consume(onMessage: (sentAtMs: number) => void): Promise<() => Promise<void>>;
  /** Releases what the queue holds (connections) and deletes it from the system. */
  close(): Promise<void>;
}

export interface PeerSystem {
  /** The label of its table row, with the settings that matter (durability, acks). */
  readonly name: string;
  /**
   * Checks its service answers (a short connect), then starts or connects what it needs
   * (servers, connections) once for the whole suite. Resolves to why it cannot run here (one
   * line: the system is skipped), or undefined.
   */
  setup(): Promise<string | undefined>;
  /** A fresh, empty queue named after `name` (letters, digits and dashes). */
  queue(name: string): Promise<PeerQueue>;
  /** The broker-side processes to charge CPU to, now. */
  brokerProcesses(): Promise<ProcessGroup[]>;
  /** Consumers that run outside the bench process (another language's worker): their CPU is client CPU. */
  consumerProcesses?(): number[];
  /** Stops what setup started and removes what it made; safe after a failed or skipped setup. */
  teardown(): Promise<void>;
}

export const PAYLOAD_BYTES = 1024;
const STAMP_CHARS = 16;
const PADDING = 'x'.repeat(PAYLOAD_BYTES - STAMP_CHARS);

/** A 1 KB ASCII payload that starts with its send time (performance.now() in ms, µs precision). */
export function stampedPayload(): string {
  return performance.now().toFixed(3).padStart(STAMP_CHARS, '0') + PADDING;
}

/** The send time a payload of `stampedPayload` carries (bytes or text). */
export function sentAtOf(payload: string | Uint8Array): number {
  const head =
    typeof payload === 'string'
      ? payload.slice(0, STAMP_CHARS)
      : Buffer.from(payload.buffer, payload.byteOffset, STAMP_CHARS).toString('latin1');
  return Number(head);
}

/** Whether something accepts TCP connections on 127.0.0.1:`port` within `timeoutMs`. */
export function reachable(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Pids of the processes whose /proc/<pid>/comm is `comm` (any owner: comm and stat are world-readable). */
export function pidsByName(comm: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === comm) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

/** Why the tests' PostgreSQL (SWITCHBOARD_TEST_DATABASE_URL) cannot be used here, or undefined. */
export async function postgresUnavailable(): Promise<string | undefined> {
  const url = postgresTestUrl();
  if (!url) return 'SWITCHBOARD_TEST_DATABASE_URL is unset';
  const { hostname, port, host } = new URL(url);
  if (hostname !== '127.0.0.1' && hostname !== 'localhost')
    return `PostgreSQL at ${host} is not on 127.0.0.1 (the bench stays on loopback)`;
  return (await reachable(Number(port || 5432))) ? undefined : `PostgreSQL does not answer at ${host}`;
}

/**
 * The PostgreSQL processes that work for `database`: its backends, plus the WAL writer and the
 * checkpointer that every commit also costs. Asked over a connection to `adminUrl` (another
 * database, so the asking backend is not counted).
 */
export async function postgresPids(adminUrl: string, database: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type IN ('walwriter', 'checkpointer')`,
      [database],
    );
    return rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/** The database a PostgreSQL URL names. */
export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}
