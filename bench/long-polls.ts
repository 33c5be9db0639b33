/**
 * Issue 20 item 4: is /healthz answered promptly while 2,000 long polls open at once (target p99
 * under 50 ms)? Three processes, 127.0.0.1 only: the built server; a /healthz probe
 * (bench/long-polls/healthz-probe.ts) asking every 10 ms over one keep-alive connection; and this
 * one, which opens the polls. Per backend: a quiet window first, then ROUNDS rounds that each open
 * POLLS receives (`timeout=WAIT_S`, spread over AGENTS agents' keys, one connection each) at once
 * and wait for all of them to time out. The probe's samples are cut into windows afterwards.
 *
 * A poll is open once the server has made its first claim and sleeps; no answer says so. Opening
 * counts as done when every poll's request is written and a `timeout=0` receive sent after them
 * has answered: it passes the same route and claim turns (`claimTurn`), behind the polls.
 * The server's own event-loop lag is noted too (bench/long-polls/loop-lag.mjs, preloaded), to tell
 * a stall of its loop from the machine's contention in the probe's figures.
 *
 * LONG_POLLS_BENCH_CPU_PROF=<dir> writes the server's CPU profile there (`node --cpu-prof`).
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { DIALECTS, postgresTestUrl, type Dialect } from '../test/helpers/database.js';
import { fmt, machine, percentile, record, ROOT, startSwitchboard, type SwitchboardProcess } from './lib.js';

const POLLS = 2_000;
const AGENTS = 100;
/** Outlasts the opening by far, so no poll answers before all are open. */
const WAIT_S = 10;
const ROUNDS = 3;
const QUIET_MS = 5_000;
/** A connection refused or reset while 2,000 connect (the listen backlog overflows) is tried again. */
const CONNECT_RETRIES = 3;
const TARGET_P99_MS = 50;

const now = () => performance.timeOrigin + performance.now();
/** An epoch time in a CPU profile's clock: CLOCK_MONOTONIC in µs, as process.hrtime's. */
const toProfileUs = (epochMs: number) => Math.round((Number(process.hrtime.bigint()) / 1e6 - now() + epochMs) * 1000);

/** CPU time (ms) every core of the machine has spent busy, from /proc/stat: the contention the figures met. */
function machineBusyMs(): number {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = ticks as number[];
  return (user! + nice! + system! + irq! + softirq! + steal!) * 10; // CLK_TCK = 100
}

/** CPU time in ms: the server's (from /proc) and the whole machine's. */
interface CpuMs {
  server: number;
  machine: number;
}

function cpuNow(server: SwitchboardProcess): CpuMs {
  return { server: server.cpuMs(), machine: machineBusyMs() };
}

/** A span of wall time, epoch ms; `cpu` is the CPU time spent over it. */
interface Window {
  from: number;
  to: number;
  cpu: CpuMs;
}

function windowOf(from: number, to: number, cpuFrom: CpuMs, cpuTo: CpuMs): Window {
  return { from, to, cpu: { server: cpuTo.server - cpuFrom.server, machine: cpuTo.machine - cpuFrom.machine } };
}

interface Round {
  /** First request → the sentinel receive answered. */
  opening: Window;
  /** The first poll answered → the last (they all time out together). */
  answering: Window;
  statuses: Map<string, number>;
  retries: number;
  /** Polls answered before opening was done: a poll that did not stay open. */
  answeredEarly: number;
}

interface Samples {
  samples: [number, number][];
  errors: number;
}

/** GET `url` with the key; resolves with the status (or the error's code) once the body is read. */
function get(url: string, key: string, agent: http.Agent, onWritten?: () => void): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent, headers: { authorization: `Bearer ${key}` }, timeout: (WAIT_S + 30) * 1000 }, (res) => {
      res.resume();
      res.once('end', () => resolve(String(res.statusCode)));
    });
    req.once('finish', () => onWritten?.());
    req.once('timeout', () => req.destroy(new Error('no answer in time')));
    req.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

async function agentKeys(server: SwitchboardProcess): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < AGENTS; i++) {
    const res = await fetch(`${server.url}/api/v1/auth/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: `crowd-${i}` }),
    });
    keys.push(((await res.json()) as { data: { key: string } }).data.key);
  }
  return keys;
}

/** Opens POLLS long polls at once, waits until they are open, then until all have answered. */
async function openPolls(server: SwitchboardProcess, keys: string[]): Promise<Round> {
  const agent = new http.Agent({ maxSockets: Infinity });
  const sentinelAgent = new http.Agent({ maxSockets: 1 });
  const receive = `${server.url}/api/v1/messaging/receive`;
  const statuses = new Map<string, number>();
  let retries = 0;
  let firstAnswer = Infinity;
  let cpuFirstAnswer: CpuMs = { server: 0, machine: 0 };
  let lastAnswer = 0;
  let openedAt = Infinity;
  let answeredEarly = 0;

  const from = now();
  const cpuFrom = cpuNow(server);
  const written: Promise<void>[] = [];
  const answered: Promise<void>[] = [];
  for (let i = 0; i < POLLS; i++) {
    const key = keys[i % keys.length]!;
    let markWritten!: () => void;
    written.push(new Promise((resolve) => (markWritten = resolve)));
    answered.push(
      (async () => {
        let status = await get(`${receive}?timeout=${WAIT_S}`, key, agent, markWritten);
        for (let retry = 0; retry < CONNECT_RETRIES && ['ECONNRESET', 'ECONNREFUSED'].includes(status); retry++) {
          retries++;
          status = await get(`${receive}?timeout=${WAIT_S}`, key, agent, markWritten);
        }
        // A poll that never got its request out counts as written, to end the opening.
        markWritten();
        const at = now();
        if (at < openedAt) answeredEarly++;
        if (at < firstAnswer) [firstAnswer, cpuFirstAnswer] = [at, cpuNow(server)];
        lastAnswer = Math.max(lastAnswer, at);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      })(),
    );
  }
  await Promise.all(written);
  const sentinel = await get(`${receive}?timeout=0`, keys[0]!, sentinelAgent);
  if (sentinel !== '200') throw new Error(`the receive after the polls answered ${sentinel}`);
  openedAt = now();
  const cpuOpened = cpuNow(server);
  await Promise.all(answered);
  const cpuLastAnswer = cpuNow(server);
  agent.destroy();
  sentinelAgent.destroy();
  return {
    opening: windowOf(from, openedAt, cpuFrom, cpuOpened),
    answering: windowOf(firstAnswer, lastAnswer, cpuFirstAnswer, cpuLastAnswer),
    statuses,
    retries,
    answeredEarly,
  };
}

function startProbe(url: string): Promise<{ probe: ChildProcess; report: () => Promise<Samples> }> {
  const probe = fork(path.join(ROOT, 'bench', 'long-polls', 'healthz-probe.ts'), [url], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const report = () =>
    new Promise<Samples>((resolve, reject) => {
      probe.once('message', (message) => resolve(message as Samples));
      probe.once('exit', (code) => reject(new Error(`the probe exited with ${code} before reporting`)));
      probe.send('report');
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the probe did not answer within 30 s')), 30_000);
    probe.once('message', () => {
      clearTimeout(timer);
      resolve({ probe, report });
    });
    probe.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the probe exited with ${code}`));
    });
  });
}

interface Run {
  dialect: Dialect;
  quiet: Window;
  rounds: Round[];
  probe: Samples;
  /** The server's timer lag: [epoch ms due, ms late]. */
  loopLag: [number, number][];
}

async function run(dialect: Dialect): Promise<Run> {
  const profile = process.env.LONG_POLLS_BENCH_CPU_PROF;
  const lagFile = path.join(os.tmpdir(), `long-polls-loop-lag-${process.pid}-${dialect}.json`);
  const server = await startSwitchboard({
    dialect,
    env: { LOOP_LAG_FILE: lagFile },
    nodeArgs: [
      '--import',
      path.join(ROOT, 'bench', 'long-polls', 'loop-lag.mjs'),
      ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
    ],
  });
  let probe: ChildProcess | undefined;
  let result: Omit<Run, 'loopLag'>;
  try {
    const keys = await agentKeys(server);
    const started = await startProbe(server.url);
    probe = started.probe;
    const cpuFrom = cpuNow(server);
    const from = now();
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const quiet = windowOf(from, now(), cpuFrom, cpuNow(server));
    const rounds: Round[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      rounds.push(await openPolls(server, keys));
      const last = rounds.at(-1)!;
      console.log(
        `${dialect} round ${round + 1}/${ROUNDS}: opened in ${fmt(last.opening.to - last.opening.from)} ms, ${[...last.statuses].map(([s, n]) => `${s}×${n}`).join(', ')}`,
      );
      if (profile)
        console.log(
          `${dialect} round ${round + 1} opening in the profile's clock (µs): ${toProfileUs(last.opening.from)}–${toProfileUs(last.opening.to)}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    result = { dialect, quiet, rounds, probe: await started.report() };
  } finally {
    if (probe && probe.exitCode === null) probe.kill();
    await server.stop();
  }
  const loopLag = JSON.parse(fs.readFileSync(lagFile, 'utf8')) as [number, number][];
  fs.rmSync(lagFile);
  return { ...result, loopLag };
}

function latencies(samples: [number, number][], windows: Window[]): number[] {
  return samples.filter(([at]) => windows.some((w) => at >= w.from && at <= w.to)).map(([, ms]) => ms);
}

function row(r: Run, label: string, windows: Window[]): string {
  const ms = latencies(r.probe.samples, windows);
  const lag = latencies(r.loopLag, windows);
  const wall = windows.reduce((sum, w) => sum + (w.to - w.from), 0);
  const server = windows.reduce((sum, w) => sum + w.cpu.server, 0);
  const busy = windows.reduce((sum, w) => sum + w.cpu.machine, 0);
  const healthz = ms.length === 0 ? ['–', '–', '–'] : [percentile(ms, 50), percentile(ms, 99), Math.max(...ms)].map((v) => fmt(v, 1));
  const loop = lag.length === 0 ? ['–', '–'] : [percentile(lag, 99), Math.max(...lag)].map((v) => fmt(v, 1));
  return `| ${r.dialect} | ${label} | ${fmt(wall)} | ${ms.length} | ${healthz.join(' | ')} | ${loop.join(' | ')} | ${fmt(server)} (${fmt((server / wall) * 100)}%) | ${fmt((busy / wall / os.cpus().length) * 100)}% |`;
}

export default async function longPolls(): Promise<void> {
  const loadBefore = os.loadavg()[0]!;
  const runs: Run[] = [];
  for (const dialect of DIALECTS.filter((d) => d === 'sqlite' || postgresTestUrl())) runs.push(await run(dialect));
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const lines = [
    `## Long polls (issue 20 item 4): /healthz while ${fmt(POLLS)} long polls open at once`,
    '',
    `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test flock /tmp/switchboard-bench.lock npm run bench -- long-polls\` at ${commit} (${new Date().toISOString().slice(0, 10)}).`,
    '',
    `Three processes: the server (dist/cli.js), a probe asking \`GET /healthz\` every 10 ms (10 ms after each answer, over one keep-alive`,
    `connection), and the bench, which opens ${fmt(POLLS)} \`GET /messaging/receive?timeout=${WAIT_S}\` at once, one connection each, over ${AGENTS} agents' keys.`,
    `Per backend: a ${QUIET_MS / 1000} s quiet window, then ${ROUNDS} rounds (the first on a fresh server), each waiting for every poll to time out.`,
    'Opening = first request → every request written and a `timeout=0` receive sent after them answered (it waits its claim turn behind',
    'the polls). Answering = first → last poll answered (they time out together). The probe waits for each answer, so a stall of',
    'S ms is one sample of ~S ms: max shows stalls, p99 of a window barely longer than the stall may not. Server CPU from /proc (10 ms ticks);',
    `machine busy: all ${os.cpus().length} cores (/proc/stat), PostgreSQL, the bench and the probe included. Loop lag: how late a 10 ms timer`,
    'in the server fired (bench/long-polls/loop-lag.mjs, preloaded): its own event loop, without the network or the probe.',
    '',
    '| backend | window | ms | probes | /healthz p50 ms | p99 ms | max ms | loop lag p99 ms | max ms | server CPU ms (% of a core) | machine busy |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const verdicts: string[] = [];
  const polls: string[] = [];
  for (const r of runs) {
    const openings = r.rounds.map((round) => round.opening);
    lines.push(row(r, 'quiet', [r.quiet]));
    r.rounds.forEach((round, i) => lines.push(row(r, `opening, round ${i + 1}${i === 0 ? ' (fresh server)' : ''}`, [round.opening])));
    lines.push(row(r, `**opening, ${ROUNDS} rounds pooled**`, openings));
    lines.push(
      row(
        r,
        `answering, ${ROUNDS} rounds pooled`,
        r.rounds.map((round) => round.answering),
      ),
    );
    const p99 = percentile(latencies(r.probe.samples, openings), 99);
    verdicts.push(`${r.dialect} **${fmt(p99, 1)} ms** (${p99 < TARGET_P99_MS ? 'met' : 'not met'})`);
    const statuses = new Map<string, number>();
    for (const round of r.rounds) for (const [status, n] of round.statuses) statuses.set(status, (statuses.get(status) ?? 0) + n);
    polls.push(
      `${r.dialect}: ${[...statuses].map(([s, n]) => `${s}×${fmt(n)}`).join(', ')}; connections retried ${r.rounds.reduce((sum, round) => sum + round.retries, 0)}, ` +
        `polls answered before opening was done ${r.rounds.reduce((sum, round) => sum + round.answeredEarly, 0)}, probe errors ${r.probe.errors}`,
    );
  }
  lines.push(
    '',
    `Polls (${ROUNDS} × ${fmt(POLLS)} per backend): ${polls.join('; ')}.`,
    '',
    `/healthz p99 while the polls open (target < ${TARGET_P99_MS} ms): ${verdicts.join(', ')}.`,
    '',
    `1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(os.loadavg()[0]!, 2)} at the end (the 2 cores are shared with other work).`,
  );
  record('long-polls', lines.join('\n'));
  console.log(lines.join('\n'));
}
