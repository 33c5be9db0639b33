/**
 * Issue 21 item 5: what `SWITCHBOARD_SQLITE_SYNCHRONOUS=full` (an fsync of the WAL at every
 * commit) costs on the messaging send figure, with group commit on (one fsync per group) and off
 * (one per request). Four servers, one per setting, loaded in turn round after round so machine
 * noise spreads over all four; 127.0.0.1 only, every run bounded in time.
 */
import http from 'node:http';
import { fmt, load, machine, median, record, startSwitchboard, type LoadResult, type SwitchboardProcess } from './lib.js';

const ROUNDS = 3;
const SECONDS = 8;
const CONNECTIONS = 50;

interface Setting {
  name: string;
  groupCommit: 'on' | 'off';
  synchronous: 'normal' | 'full';
}

const SETTINGS: Setting[] = [
  { name: 'group commit, normal (default)', groupCommit: 'on', synchronous: 'normal' },
  { name: 'group commit, full', groupCommit: 'on', synchronous: 'full' },
  { name: 'no group commit, normal', groupCommit: 'off', synchronous: 'normal' },
  { name: 'no group commit, full', groupCommit: 'off', synchronous: 'full' },
];

function request(url: string, method: string, key: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      url,
      { method, headers: { authorization: `Bearer ${key}`, ...(data ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks).toString()));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Physical commits so far, from GET /metrics. */
async function commits(server: SwitchboardProcess): Promise<number> {
  const text = await request(`${server.url}/metrics`, 'GET', server.adminKey);
  const line = text.split('\n').find((l) => l.startsWith('switchboard_sqlite_commits_total'));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

interface Run extends LoadResult {
  commitsPerRequest: number;
}

export default async function run(): Promise<void> {
  const servers: SwitchboardProcess[] = [];
  try {
    for (const setting of SETTINGS) {
      servers.push(
        await startSwitchboard({
          dialect: 'sqlite',
          env: { SWITCHBOARD_SQLITE_GROUP_COMMIT: setting.groupCommit, SWITCHBOARD_SQLITE_SYNCHRONOUS: setting.synchronous },
        }),
      );
    }
    const body = JSON.stringify({ destination: 'bench-sink', event_name: 'bench', payload: { n: 1, text: 'hello' } });
    const sendLoads = await Promise.all(
      servers.map(async (server) => {
        const created = JSON.parse(
          await request(`${server.url}/api/v1/auth/keys`, 'POST', server.adminKey, { agent_id: 'bench-sender' }),
        ) as {
          data: { key: string };
        };
        return {
          url: `${server.url}/api/v1/messaging/send`,
          method: 'POST' as const,
          body,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${created.data.key}` },
          connections: CONNECTIONS,
          serverCpuMs: () => server.cpuMs(),
        };
      }),
    );
    for (const options of sendLoads) await load({ ...options, duration: 2 });
    const runs: Run[][] = SETTINGS.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, server] of servers.entries()) {
        const before = await commits(server);
        const result = await load({ ...sendLoads[i]!, duration: SECONDS });
        runs[i]!.push({ ...result, commitsPerRequest: ((await commits(server)) - before) / result.requests });
      }
    }

    const pick = (of: Run[], figure: (r: Run) => number) => median(of.map(figure));
    const rows = SETTINGS.map((setting, i) => ({
      setting,
      rps: pick(runs[i]!, (r) => r.rps),
      p50: pick(runs[i]!, (r) => r.p50),
      p99: pick(runs[i]!, (r) => r.p99),
      cpuUs: pick(runs[i]!, (r) => r.cpuUs ?? Number.NaN),
      commitsPerRequest: pick(runs[i]!, (r) => r.commitsPerRequest),
      errors: runs[i]!.reduce((sum, r) => sum + r.errors + r.non2xx, 0),
    }));
    const cost = (full: (typeof rows)[number], normal: (typeof rows)[number]) => `${fmt((full.rps / normal.rps - 1) * 100, 1)}%`;
    record(
      'sqlite-durability',
      [
        '## SQLite durability (issue 21 item 5): `SWITCHBOARD_SQLITE_SYNCHRONOUS` and group commit on the send figure',
        '',
        `Machine: ${machine()}. Command: \`npm run build && flock /tmp/switchboard-bench.lock npm run bench -- sqlite-durability\` (${new Date().toISOString().slice(0, 10)}).`,
        '',
        `\`POST /api/v1/messaging/send\` (agent key, ${CONNECTIONS} connections) on four servers, one per setting, each warmed up for 2 s,`,
        `then ${ROUNDS} rounds of ${SECONDS} s taking the servers in turn (medians). The data dir is on the machine's ext4 disk (a virtual`,
        'disk: what an fsync costs there depends on the host). Server CPU per request from /proc; commits per request from `GET /metrics`.',
        '',
        '| setting | req/s | p50 ms | p99 ms | server CPU µs/req | commits/req | errors |',
        '|---|---:|---:|---:|---:|---:|---:|',
        ...rows.map(
          (r) =>
            `| ${r.setting.name} | ${fmt(r.rps)} | ${r.p50} | ${r.p99} | ${fmt(r.cpuUs)} | ${fmt(r.commitsPerRequest, 3)} | ${r.errors} |`,
        ),
        '',
        `The cost of \`full\` in req/s: ${cost(rows[1]!, rows[0]!)} with group commit, ${cost(rows[3]!, rows[2]!)} without.`,
      ].join('\n'),
    );
  } finally {
    for (const server of servers) await server.stop();
  }
}
