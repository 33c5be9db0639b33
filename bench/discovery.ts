/**
 * Issue 4 benchmarks, one server, 127.0.0.1 only, each phase bounded in time. 10,000 agents
 * register across 100 capability names (each with its own description) and send a heartbeat:
 * (a) lookup returning 20 agents vs a bare Fastify GET reading the same 20 rows from the same
 *     SQLite file; targets ≥ 75% of its requests/s, p99 ≤ 2× its p99;
 * (b) search over the 10,000 capabilities at 10 connections; target p99 ≤ 20 ms;
 * (c) heartbeat vs a bare Fastify POST + one SQLite update; target ≥ 80% of its requests/s.
 */
import http from 'node:http';
import path from 'node:path';
import type autocannon from 'autocannon';
import { compare, fmt, load, machine, record, startBaseline, startSwitchboard, type SwitchboardProcess } from './lib.js';

const AGENTS = 10_000;
/** Interleaved rounds per side: three, so one round disturbed by the shared host does not move the median. */
const ROUNDS = 3;
const DOMAINS = ['text', 'image', 'audio', 'video', 'code', 'data', 'web', 'email', 'finance', 'legal'];
const ACTIONS = ['summarize', 'translate', 'classify', 'extract', 'generate', 'review', 'convert', 'search', 'detect', 'schedule'];
const OBJECTS = [
  'reports',
  'invoices',
  'photos',
  'recordings',
  'contracts',
  'tickets',
  'articles',
  'spreadsheets',
  'emails',
  'logs',
  'receipts',
  'slides',
  'podcasts',
  'screenshots',
  'pull requests',
  'datasets',
  'web pages',
  'meetings',
  'forms',
  'charts',
];
const QUALIFIERS = [
  'quickly',
  'in bulk',
  'for legal teams',
  'for support',
  'with citations',
  'in many languages',
  'on a schedule',
  'privately',
];
const QUERIES = [
  'summarise a long report',
  'translate an email into french',
  'detect faces in photos',
  'review a pull request for bugs',
  'extract totals from scanned receipts',
  'classify support tickets by urgency',
  'convert spreadsheets to charts',
  'search web pages with citations',
  'schedule meetings for the team',
  'generate slides from an article',
];

const httpAgent = new http.Agent({ keepAlive: true, maxSockets: 32 });

function call(url: string, method: string, key: string, body?: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      url,
      {
        method,
        agent: httpAgent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Registers the agents (16 requests in flight) and sends one heartbeat each. */
async function seed(server: SwitchboardProcess): Promise<number> {
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < AGENTS; i = next++) {
      const domain = DOMAINS[i % DOMAINS.length]!;
      const action = ACTIONS[Math.floor(i / DOMAINS.length) % ACTIONS.length]!;
      const object = OBJECTS[(i * 7) % OBJECTS.length]!;
      const qualifier = QUALIFIERS[(i * 3) % QUALIFIERS.length]!;
      const status = await call(`${server.url}/api/v1/discovery/capabilities`, 'POST', server.adminKey, {
        agent_id: `bench-agent-${i}`,
        capability: `${domain}.${action}`,
        metadata: { description: `${action} ${domain} ${object} ${qualifier}`, tags: [domain, action], weight: 1 + (i % 3) },
        groups: [`team-${i % 20}`],
      });
      if (status !== 201) throw new Error(`register answered ${status}`);
      const beat = await call(`${server.url}/api/v1/discovery/heartbeat`, 'POST', server.adminKey, {
        agent_id: `bench-agent-${i}`,
        load: (i % 10) / 10,
      });
      if (beat !== 200) throw new Error(`heartbeat answered ${beat}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return (Date.now() - started) / 1000;
}

/** One autocannon request whose JSON body cycles through `bodies`. */
function cycling(bodies: unknown[]): autocannon.Request[] {
  let i = 0;
  return [
    {
      method: 'POST',
      setupRequest: (request) => ({ ...request, body: JSON.stringify(bodies[i++ % bodies.length]) }),
    },
  ];
}

export default async function discovery(): Promise<void> {
  const server = await startSwitchboard({ dialect: 'sqlite' });
  const lines: string[] = [];
  try {
    const seedSeconds = await seed(server);
    const auth = { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' };

    // (a) lookup vs the same 20 rows read straight from SQLite.
    const lookupBaseline = await startBaseline('sqlite-lookup.ts', {
      BASELINE_DB: path.join(server.database.dataDir, 'switchboard.db'),
    });
    let lookupResult;
    try {
      lookupResult = await compare(
        { url: `${lookupBaseline.url}/?capability=text.summarize`, connections: 50, duration: 10, serverCpuMs: lookupBaseline.cpuMs },
        {
          url: `${server.url}/api/v1/discovery/agents?capability=text.summarize&limit=20`,
          headers: auth,
          connections: 50,
          duration: 10,
          serverCpuMs: server.cpuMs,
        },
        ROUNDS,
      );
    } finally {
      await lookupBaseline.stop();
    }
    const { a: la, b: lb } = lookupResult;
    if (lb.non2xx > 0 || lb.errors > 0) throw new Error(`lookup answered ${lb.non2xx} non-2xx and ${lb.errors} errors`);

    // (b) search, 10 connections, queries in rotation.
    await load({
      url: `${server.url}/api/v1/discovery/search`,
      method: 'POST',
      headers: auth,
      connections: 10,
      duration: 2,
      requests: cycling(QUERIES.map((query) => ({ query, top_k: 10 }))),
    });
    const sr = await load({
      url: `${server.url}/api/v1/discovery/search`,
      method: 'POST',
      headers: auth,
      connections: 10,
      duration: 10,
      requests: cycling(QUERIES.map((query) => ({ query, top_k: 10 }))),
      serverCpuMs: server.cpuMs,
    });
    if (sr.non2xx > 0 || sr.errors > 0) throw new Error(`search answered ${sr.non2xx} non-2xx and ${sr.errors} errors`);

    // (c) heartbeat vs one SQLite update, agents in rotation.
    const beats = Array.from({ length: 1000 }, (_, i) => ({ agent_id: `bench-agent-${i * 10}`, load: (i % 10) / 10 }));
    const updateBaseline = await startBaseline('sqlite-update.ts', { BASELINE_AGENTS: String(AGENTS) });
    let beatResult;
    try {
      beatResult = await compare(
        {
          url: `${updateBaseline.url}/`,
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          connections: 50,
          duration: 10,
          requests: cycling(beats),
          serverCpuMs: updateBaseline.cpuMs,
        },
        {
          url: `${server.url}/api/v1/discovery/heartbeat`,
          method: 'POST',
          headers: auth,
          connections: 50,
          duration: 10,
          requests: cycling(beats),
          serverCpuMs: server.cpuMs,
        },
        ROUNDS,
      );
    } finally {
      await updateBaseline.stop();
    }
    const { a: ha, b: hb } = beatResult;
    if (hb.non2xx > 0 || hb.errors > 0) throw new Error(`heartbeat answered ${hb.non2xx} non-2xx and ${hb.errors} errors`);

    const pct = (x: number, y: number) => `${fmt((100 * x) / y, 1)}%`;
    const cpu = (r: { cpuUs?: number }) => (r.cpuUs === undefined ? '–' : fmt(r.cpuUs));
    lines.push(
      '## Discovery (issue 4): lookup, search, heartbeat',
      '',
      `Machine: ${machine()}. Command: \`npm run build && npm run bench -- discovery\` (${new Date().toISOString().slice(0, 10)}).`,
      `Data: ${fmt(AGENTS)} agents across 100 capability names (one distinct description each) and one heartbeat each, seeded over HTTP in ${fmt(seedSeconds, 1)} s; SQLite.`,
      `Lookup and heartbeat: each side 2 s warm-up, then ${ROUNDS} interleaved rounds of 10 s at 50 connections; medians. Search: 2 s warm-up, then 10 s at 10 connections, 10 queries in rotation.`,
      '',
      '| target | req/s | p50 ms | p99 ms | server CPU µs/req |',
      '|---|---:|---:|---:|---:|',
      `| bare Fastify GET: the same 20 rows from the same SQLite file | ${fmt(la.rps)} | ${la.p50} | ${la.p99} | ${cpu(la)} |`,
      `| GET /api/v1/discovery/agents?capability=text.summarize&limit=20 | ${fmt(lb.rps)} | ${lb.p50} | ${lb.p99} | ${cpu(lb)} |`,
      `| POST /api/v1/discovery/search (top_k 10, 10 connections) | ${fmt(sr.rps)} | ${sr.p50} | ${sr.p99} | ${cpu(sr)} |`,
      `| bare Fastify POST + one SQLite update | ${fmt(ha.rps)} | ${ha.p50} | ${ha.p99} | ${cpu(ha)} |`,
      `| POST /api/v1/discovery/heartbeat | ${fmt(hb.rps)} | ${hb.p50} | ${hb.p99} | ${cpu(hb)} |`,
      '',
      `- Lookup: **${pct(lb.rps, la.rps)}** of the baseline's requests/s (target ≥ 75%); p99 ${lb.p99} ms vs ${la.p99} ms = **${fmt(lb.p99 / la.p99, 2)}×** (target ≤ 2×).`,
      `- Search: p99 **${sr.p99} ms** at 10 connections over ${fmt(AGENTS)} capabilities (target ≤ 20 ms).`,
      `- Heartbeat: **${pct(hb.rps, ha.rps)}** of the baseline's requests/s (target ≥ 80%).`,
    );
    record('discovery', lines.join('\n'));
    console.log(lines.join('\n'));
  } finally {
    httpAgent.destroy();
    await server.stop();
  }
}
