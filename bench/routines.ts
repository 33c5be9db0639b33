/**
 * Issue 5: 10,000 enabled cron routines — (a) all due in the same second: every fire (ledger
 * row + execution + inbox message) created within 0.5 s on SQLite and 1 s on PostgreSQL;
 * (b) spread over a minute: fire lag p99 ≤ 100 ms; (c) idle between fires: server CPU ≤ 2% of
 * one core, RSS ≤ 300 MB. Routines are created through the API; fires are counted by reading
 * the database beside the server (a read-only connection). 127.0.0.1 only, bounded in time.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { fmt, machine, percentile, record, startSwitchboard, type SwitchboardProcess } from './lib.js';

const ROUTINES = 10_000;
const CREATE_CLIENTS = 16;

type Query = (sql: string, params: unknown[]) => Promise<Record<string, unknown>[]>;

function reader(server: SwitchboardProcess): { query: Query; close: () => Promise<void> } {
  if (server.database.databaseUrl === null) {
    const db = new Database(path.join(server.database.dataDir, 'switchboard.db'), { readonly: true });
    return {
      query: async (sql, params) => db.prepare(sql).all(...params) as Record<string, unknown>[],
      close: async () => void db.close(),
    };
  }
  const pool = new pg.Pool({ connectionString: server.database.databaseUrl, max: 1 });
  return {
    query: async (sql, params) => {
      let n = 0;
      return (
        await pool.query(
          sql.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows;
    },
    close: () => pool.end(),
  };
}

async function createRoutines(server: SwitchboardProcess, cron: (i: number) => string, enabled = true): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CREATE_CLIENTS }, async () => {
      for (let i = next++; i < ROUTINES; i = next++) {
        const res = await fetch(`${server.url}/core/api/v1/routines`, {
          method: 'POST',
          headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            name: `r${i}`,
            trigger_type: 'cron',
            cron_expression: cron(i),
            target_agent: `agent-${i % 100}`,
            enabled,
          }),
        });
        if (res.status !== 201) throw new Error(`create routine: ${res.status} ${await res.text()}`);
      }
    }),
  );
  return ROUTINES / ((performance.now() - started) / 1000);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** (a) Every routine due at one second, far enough ahead for the creates to finish. */
export async function sameSecond(server: SwitchboardProcess) {
  const { query, close } = reader(server);
  try {
    const target = Math.ceil((Date.now() + 60_000) / 1000) * 1000;
    const at = new Date(target);
    const cron = `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
    const createRate = await createRoutines(server, () => cron);
    if (Date.now() > target - 2000) throw new Error('creating the routines took longer than the lead time');
    await sleep(target - Date.now() - 200);
    let done = 0;
    let doneAt = 0;
    const deadline = target + 30_000;
    const count = async (table: string, column: string) =>
      Number((await query(`select count(*) as n from ${table} where ${column} = ?`, [target]))[0]!.n);
    while (Date.now() < deadline) {
      done = await count('routine_fires', 'scheduled_for');
      if (done >= ROUTINES) {
        doneAt = Date.now();
        break;
      }
      await sleep(5);
    }
    if (done < ROUTINES) throw new Error(`only ${done} of ${ROUTINES} fires within 30 s`);
    const executions = await count('routine_executions', 'scheduled_for');
    const messages = Number((await query(`select count(*) as n from messages where event_name = ?`, ['routine.execute']))[0]!.n);
    // When each batch began (its fires share created_at): where the time went, while iterating.
    const batches = await query(
      `select created_at - scheduled_for as at, count(*) as n from routine_fires where scheduled_for = ? group by created_at, scheduled_for order by created_at`,
      [target],
    );
    return {
      createRate,
      allFiredMs: doneAt - target,
      executions,
      messages,
      batches: batches.map((b) => `${Number(b.n)}@${Number(b.at)}`).join(' '),
    };
  } finally {
    await close();
  }
}

/** (b) 10,000 routines spread over the 60 seconds of a minute; lag = fire row time − slot. */
async function spread(server: SwitchboardProcess) {
  const { query, close } = reader(server);
  try {
    await createRoutines(server, (i) => `${i % 60} * * * * *`);
    const from = Date.now() + 2000;
    await sleep(62_000);
    const rows = await query(`select created_at - scheduled_for as lag from routine_fires where scheduled_for >= ? and scheduled_for < ?`, [
      from,
      from + 60_000,
    ]);
    const lags = rows.map((r) => Number(r.lag));
    return { fires: lags.length, p50: percentile(lags, 50), p99: percentile(lags, 99), max: Math.max(...lags) };
  } finally {
    await close();
  }
}

/** (c) 10,000 routines whose next fire is an hour away: the server's CPU and RSS while nothing is due. */
async function idle(server: SwitchboardProcess) {
  const inAnHour = new Date(Date.now() + 3_600_000);
  await createRoutines(server, () => `0 ${inAnHour.getUTCMinutes()} * * * *`);
  await sleep(3000);
  const cpu0 = server.cpuMs();
  const t0 = performance.now();
  await sleep(20_000);
  const cpuShare = (server.cpuMs() - cpu0) / (performance.now() - t0);
  return { cpuPercent: cpuShare * 100, rssMb: server.rss() / 1024 ** 2 };
}

/**
 * While iterating: ROUTINES_BENCH_ONLY=a runs part (a) alone and records nothing;
 * ROUTINES_BENCH_DIALECTS=sqlite|postgres narrows it; BENCH_CPU_PROF=DIR writes the
 * server's CPU profile there (bench/lib.ts). The recorded run is the full suite with none of them set.
 */
async function sameSecondOnly(): Promise<void> {
  const dialects = (process.env.ROUTINES_BENCH_DIALECTS ?? 'sqlite,postgres').split(',') as ('sqlite' | 'postgres')[];
  for (const dialect of dialects) {
    const server = await startSwitchboard({ dialect });
    try {
      console.log(dialect, await sameSecond(server));
    } finally {
      await server.stop();
    }
  }
}

export default async function routines(): Promise<void> {
  if (process.env.ROUTINES_BENCH_ONLY === 'a') return sameSecondOnly();
  const rows: string[] = [];
  let spreadResult: Awaited<ReturnType<typeof spread>> | undefined;
  let idleResult: Awaited<ReturnType<typeof idle>> | undefined;
  for (const dialect of ['sqlite', 'postgres'] as const) {
    const server = await startSwitchboard({ dialect });
    try {
      const a = await sameSecond(server);
      console.log(dialect, a);
      rows.push(
        `| ${dialect} | ${fmt(a.createRate)} | **${fmt(a.allFiredMs)} ms** | ${fmt(a.executions)} | ${fmt(a.messages)} | ${dialect === 'sqlite' ? '≤ 500 ms' : '≤ 1,000 ms'} |`,
      );
    } finally {
      await server.stop();
    }
  }
  {
    const server = await startSwitchboard({ dialect: 'sqlite' });
    try {
      spreadResult = await spread(server);
      console.log('spread', spreadResult);
    } finally {
      await server.stop();
    }
  }
  {
    const server = await startSwitchboard({ dialect: 'sqlite' });
    try {
      idleResult = await idle(server);
      console.log('idle', idleResult);
    } finally {
      await server.stop();
    }
  }
  const b = spreadResult!;
  const c = idleResult!;
  record(
    'routines',
    `## Routines (issue 5): 10,000 cron routines

Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench -- routines\` (${new Date().toISOString().slice(0, 10)}).
Routines are created through the API (${CREATE_CLIENTS} clients); fires are counted with a read-only connection to the server's database.

### (a) All 10,000 due in the same second

Time from the slot to the moment all 10,000 ledger rows are visible (polled every 5 ms); each fire also wrote its execution and inbox message in the same transaction.

| storage | routines created/s | all fired after | executions | messages | target |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}

### (b) Spread over a minute (SQLite)

10,000 routines with a seconds field \`s * * * * *\` (167 per second), one minute observed: ${fmt(b.fires)} fires.
Lag (fire row time − slot): p50 **${fmt(b.p50)} ms**, p99 **${fmt(b.p99)} ms**, max ${fmt(b.max)} ms (target p99 ≤ 100 ms).

### (c) Idle between fires (SQLite)

10,000 enabled routines whose next fire is an hour away, 20 s observed: server CPU **${fmt(c.cpuPercent, 2)}%** of one core
(target ≤ 2%), RSS **${fmt(c.rssMb)} MB** (target ≤ 300 MB).
`,
  );
}
