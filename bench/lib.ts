/**
 * Benchmark plumbing: servers as child processes on 127.0.0.1 (so the load generator does not
 * share an event loop with the server), autocannon runs bounded in time, and RESULTS.md
 * sections that a re-run replaces. All traffic goes to 127.0.0.1 and every run stops itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createTestDatabase, type Dialect, type TestDatabase } from '../test/helpers/database.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const RESULTS_FILE = path.join(ROOT, 'bench', 'RESULTS.md');

export interface ServerProcess {
  readonly url: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resident set size in bytes, read from /proc. */
  rss(): number;
  /** CPU time (user + system) in ms consumed so far, read from /proc. */
  cpuMs(): number;
  stop(): Promise<void>;
}

export interface SwitchboardProcess extends ServerProcess {
  readonly adminKey: string;
  readonly database: TestDatabase;
}

function procStat(pid: number): { rss: number; cpuMs: number } {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = 100; // CLK_TCK on Linux
  const pageSize = 4096;
  return {
    cpuMs: ((Number(fields[11]) + Number(fields[12])) * 1000) / ticks,
    rss: Number(fields[21]) * pageSize,
  };
}

/** Waits for a JSON log line carrying `url` on the child's stdout. */
function waitForUrl(child: ChildProcess, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 30 s`)), 30_000);
    lines.on('line', (line) => {
      try {
        const parsed = JSON.parse(line) as { url?: string };
        if (parsed.url) {
          clearTimeout(timer);
          // Its later lines (one per request at info) are drained unread, as a log file takes them.
          lines.close();
          child.stdout!.resume();
          resolve(parsed.url);
        }
      } catch {
        // not a JSON line
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code} before listening`));
    });
  });
}

/** Resolves with `url` once its /healthz answers (within 30 s). */
async function waitForHealth(child: ChildProcess, url: string): Promise<string> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline && child.exitCode === null;) {
    if (
      await fetch(`${url}/healthz`).then(
        (res) => res.ok,
        () => false,
      )
    )
      return url;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`switchboard did not answer at ${url} within 30 s`);
}

/** A port no one listens on now. */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function wrap(child: ChildProcess, url: string): ServerProcess {
  const pid = child.pid!;
  return {
    url,
    pid,
    child,
    rss: () => procStat(pid).rss,
    cpuMs: () => procStat(pid).cpuMs,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), 10_000).unref();
      }),
  };
}

/** The node flags the `switchboard` bin and `npm start` serve with (the first line of src/cli.ts). */
export const SERVING_NODE_FLAGS = fs
  .readFileSync(path.join(ROOT, 'src', 'cli.ts'), 'utf8')
  .split('\n')[0]!
  .split(' ')
  .filter((arg) => arg.startsWith('--'));

/** The SWITCHBOARD_SQLITE_* entries of an environment. */
export function sqliteSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[0].startsWith('SWITCHBOARD_SQLITE_') && entry[1] !== undefined),
  );
}

/** With BENCH_CPU_PROF=DIR every server a bench starts writes its V8 CPU profile there when it exits. */
function profilingFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/**
 * Starts `node dist/cli.js serve`, with the serving flags, on a fresh database of the given dialect;
 * `root` names another built checkout to serve from (a before/after comparison).
 */
export async function startSwitchboard(
  options: { dialect?: Dialect; env?: Record<string, string>; database?: TestDatabase; nodeArgs?: string[]; root?: string } = {},
): Promise<SwitchboardProcess> {
  const root = options.root ?? ROOT;
  const database = options.database ?? (await createTestDatabase(options.dialect ?? 'sqlite'));
  const adminKey = `sk_bench_${randomBytes(16).toString('hex')}`;
  const child = spawn(
    process.execPath,
    [...SERVING_NODE_FLAGS, ...profilingFlags(), ...(options.nodeArgs ?? []), path.join(root, 'dist', 'cli.js'), 'serve'],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        PATH: process.env.PATH,
        SWITCHBOARD_HOST: '127.0.0.1',
        SWITCHBOARD_PORT: '0',
        SWITCHBOARD_ADMIN_KEY: adminKey,
        SWITCHBOARD_LOG_LEVEL: 'info',
        // A budget far above any bench's rate keeps the limiter on the hot path without throttling.
        SWITCHBOARD_RATE_LIMIT: '1000000000',
        // The bench's own SWITCHBOARD_SQLITE_* (group commit, synchronous) reach the server.
        ...sqliteSettings(process.env),
        SWITCHBOARD_DATA_DIR: database.dataDir,
        ...database.env,
        ...options.env,
      },
    },
  );
  // A server that logs below info does not announce its URL: it is found at the port it was given.
  const port = options.env?.SWITCHBOARD_PORT;
  const url = port ? await waitForHealth(child, `http://127.0.0.1:${port}`) : await waitForUrl(child, 'switchboard');
  const server = wrap(child, url);
  return {
    ...server,
    adminKey,
    database,
    stop: async () => {
      await server.stop();
      if (!options.database) await database.drop();
    },
  };
}

/** Starts a baseline server script from bench/baselines (it prints `{"url": …}` when listening). */
export async function startBaseline(script: string, env: Record<string, string> = {}): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'baselines', script)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH, PORT: '0', ...env },
  });
  return wrap(child, await waitForUrl(child, script));
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string>;
  body?: string | Buffer;
  connections?: number;
  /** Seconds (bounded: at most 60). */
  duration?: number;
  /** Requests per connection-run setup, for dynamic bodies. */
  requests?: autocannon.Request[];
  pipelining?: number;
  /** The server's CPU time so far (ms): the result then says what one request cost it. */
  serverCpuMs?: () => number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
  /** Server CPU µs per request (with `serverCpuMs`): unlike req/s, it barely moves with other load on the machine. */
  cpuUs?: number;
}

/** One autocannon run against 127.0.0.1, bounded in time. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const target = new URL(options.url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('benchmarks only target loopback');
  const cpuBefore = options.serverCpuMs?.();
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 50,
    duration: Math.min(options.duration ?? 10, 60),
    pipelining: options.pipelining ?? 1,
    requests: options.requests,
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    cpuUs:
      cpuBefore === undefined || result.requests.total === 0
        ? undefined
        : ((options.serverCpuMs!() - cpuBefore) * 1000) / result.requests.total,
  };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Percentile (0..100) of raw samples. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * Runs A and B alternately `rounds` times after a warm-up of each, and returns the median of
 * each figure (interleaving spreads machine noise evenly over both sides).
 */
export async function compare(a: LoadOptions, b: LoadOptions, rounds = 2, warmupSeconds = 2): Promise<{ a: LoadResult; b: LoadResult }> {
  await load({ ...a, duration: warmupSeconds });
  await load({ ...b, duration: warmupSeconds });
  const as: LoadResult[] = [];
  const bs: LoadResult[] = [];
  for (let i = 0; i < rounds; i++) {
    as.push(await load(a));
    bs.push(await load(b));
  }
  const pick = (runs: LoadResult[]): LoadResult => ({
    rps: median(runs.map((r) => r.rps)),
    p50: median(runs.map((r) => r.p50)),
    p99: median(runs.map((r) => r.p99)),
    requests: runs.reduce((sum, r) => sum + r.requests, 0),
    errors: runs.reduce((sum, r) => sum + r.errors, 0),
    non2xx: runs.reduce((sum, r) => sum + r.non2xx, 0),
    cpuUs: runs.every((r) => r.cpuUs !== undefined) ? median(runs.map((r) => r.cpuUs!)) : undefined,
  });
  return { a: pick(as), b: pick(bs) };
}

export function machine(): string {
  const cpus = os.cpus();
  return `${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}`;
}

/**
 * Replaces (or appends) the section `name` of bench/RESULTS.md, so each suite's latest run is
 * what the file shows. Sections are delimited by HTML comments.
 */
export function record(name: string, markdown: string): void {
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const current = fs.existsSync(RESULTS_FILE) ? fs.readFileSync(RESULTS_FILE, 'utf8') : '# Benchmark results\n';
  const from = current.indexOf(start);
  const to = current.indexOf(end);
  const next =
    from >= 0 && to > from ? current.slice(0, from) + block + current.slice(to + end.length) : `${current.trimEnd()}\n\n${block}\n`;
  fs.writeFileSync(RESULTS_FILE, next);
}

export function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** POSTs `body` to `path` as the server's admin; throws unless the answer is 201. */
export async function adminPost(server: SwitchboardProcess, path: string, body: unknown): Promise<{ data: { id: string } }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { data: { id: string } };
}

/**
 * CPU ms spent so far by the postgres processes whose command line names `dbName` (its backends),
 * plus what every backend that has exited cost (the postmaster's children's times): a pool closes
 * idle connections during a run, and a backend that exits between two readings would otherwise
 * take its whole CPU out of the difference. Exited backends of other databases count too, so
 * measure on a quiet server.
 */
export function backendCpuMs(dbName: string): number {
  const ticks = 100;
  const times = (pid: string, first: number) => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { cpuMs: ((Number(fields[first]) + Number(fields[first + 1])) * 1000) / ticks, parent: fields[1]! };
  };
  let total = 0;
  let postmaster: string | undefined;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.startsWith('postgres: ')) continue;
      const backend = times(pid, 11);
      postmaster ??= backend.parent;
      if (cmdline.includes(` ${dbName} `)) total += backend.cpuMs;
    } catch {
      // the process ended meanwhile
    }
  }
  // cutime and cstime: the children the postmaster has waited for.
  return postmaster === undefined ? total : total + times(postmaster, 13).cpuMs;
}
