/**
 * `npm run bench -- usage`: usage totals over many records (default 10,000,000; `USAGE_RECORDS`
 * for a shorter run) on SQLite and PostgreSQL. The records and their hourly rollup are written
 * straight into a migrated database (through the API it would take hours), spread over 30 days,
 * 200 agents, 10 models, 20 capabilities and 50 plans, 60% of them in runs of 5 records; then a
 * server answers `GET /api/v1/usage` for each grouping: p50 and the server's CPU per query. The
 * rollup is seeded as the retention worker leaves it: a row per key per day before yesterday.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../test/helpers/database.js';
import { fmt, machine, median, record, startSwitchboard } from './lib.js';

const RECORDS = Number(process.env.USAGE_RECORDS ?? 10_000_000);
const QUERIES = 21;
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/**
 * The seeded rows as one INSERT … SELECT over the integers 0 … n-1 (`i`), per dialect. Three
 * blocks of five records in five belong to run i / 5 (its five steps by five agents of its plan); the others to agent
 * i % 200. An agent has one model and one capability.
 */
function seedSql(now: number, integers: string): string {
  const start = now - 30 * DAY_MS;
  const inRun = '(i / 5) % 5 < 3';
  const agent = `CASE WHEN ${inRun} THEN ((i / 5) % 50) * 4 + i % 5 ELSE i % 200 END`;
  return `INSERT INTO usage_records (id, agent_id, model, provider, input_tokens, output_tokens, cached_tokens, cost_usd, message_id, run_id, step_id, plan_id, capability, recorded_at)
    SELECT 'use_' || i, 'agent-' || a, 'model-' || (a % 10), NULL, 100 + i % 900, 50 + i % 400, 0, (i % 1000) / 10000.0, NULL,
      CASE WHEN ${inRun} THEN 'run_' || (i / 5) END, CASE WHEN ${inRun} THEN 'step-' || (i % 5) END,
      CASE WHEN ${inRun} THEN 'plan_' || ((i / 5) % 50) END, 'cap-' || (a % 20),
      ${start} + CAST(i AS BIGINT) * ${Math.floor((30 * DAY_MS) / RECORDS)}
    FROM (SELECT i, ${agent} AS a FROM ${integers}) AS seq`;
}

/** The hourly rollup of the seeded records, merged per day before yesterday as the server's retention worker leaves it. */
function rollupSql(now: number): string {
  const merged = now - (now % DAY_MS) - DAY_MS;
  const hour = `recorded_at - (recorded_at % ${HOUR_MS})`;
  return `INSERT INTO usage_hourly (hour, agent_id, model, capability, plan_id, count, input_tokens, output_tokens, cached_tokens, cost_usd)
    SELECT CASE WHEN recorded_at < ${merged} THEN recorded_at - (recorded_at % ${DAY_MS}) ELSE ${hour} END, agent_id, model,
      COALESCE(capability, ''), COALESCE(plan_id, ''), count(*), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(cost_usd)
    FROM usage_records GROUP BY 1, 2, 3, 4, 5`;
}

async function seed(database: TestDatabase, now: number): Promise<number> {
  if (database.databaseUrl) {
    const client = new pg.Client({ connectionString: database.databaseUrl });
    await client.connect();
    try {
      // The rollup trigger is off while the records go in: the rollup is written below as the retention worker leaves it.
      await client.query('ALTER TABLE usage_records DISABLE TRIGGER USER');
      await client.query(seedSql(now, `generate_series(0, ${RECORDS - 1}) AS s(i)`));
      await client.query('ALTER TABLE usage_records ENABLE TRIGGER USER');
      await client.query(rollupSql(now));
      // Vacuumed as autovacuum leaves a table that only grows (it vacuums after inserts too): the
      // visibility map lets totals by run read the plan index alone, not each record's page.
      await client.query('VACUUM (ANALYZE) usage_records');
      await client.query('VACUUM (ANALYZE) usage_hourly');
      return Number((await client.query('SELECT count(*) AS n FROM usage_hourly')).rows[0].n);
    } finally {
      await client.end();
    }
  }
  const db = new Database(`${database.dataDir}/switchboard.db`);
  try {
    // As on PostgreSQL, without the rollup trigger while the records go in (SQLite cannot disable one: dropped and created again).
    const triggers = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'usage_records'`).all() as {
      name: string;
      sql: string;
    }[];
    for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
    db.exec(`WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < ${RECORDS - 1}) ${seedSql(now, 's')}`);
    for (const { sql } of triggers) db.exec(sql);
    db.exec(rollupSql(now));
    db.exec('ANALYZE');
    db.pragma('wal_checkpoint(TRUNCATE)');
    return Number((db.prepare('SELECT count(*) AS n FROM usage_hourly').get() as { n: number }).n);
  } finally {
    db.close();
  }
}

export default async function usage(): Promise<void> {
  const lines = [`${machine()}.`, ''];
  const now = Date.now();
  const week = new Date(now - 7 * DAY_MS).toISOString();
  const queries = [
    ['by agent, all time', 'group_by=agent'],
    ['by model, last 7 days', `group_by=model&after=${week}`],
    ['by day, one agent', 'group_by=day&agent_id=agent-7'],
    ['by plan', 'group_by=plan'],
    ['by run, one plan, last 7 days', `group_by=run&plan_id=plan_2&after=${week}`],
    ['one run, by model', 'group_by=model&run_id=run_1000'],
    ['by capability, one model, last 7 days', `group_by=capability&model=model-2&after=${week}`],
  ] as const;
  lines.push(
    `### Usage totals over ${fmt(RECORDS)} records (30 days, 200 agents, 10 models, 50 plans; ${QUERIES} sequential queries each, after one warm-up)`,
    '',
    '| backend | rollup rows | query | p50 ms | server CPU ms/query |',
    '|---|---:|---|---:|---:|',
  );
  for (const dialect of ['sqlite', 'postgres'] as const) {
    if (dialect === 'postgres' && !process.env.SWITCHBOARD_TEST_DATABASE_URL) continue;
    const database = await createTestDatabase(dialect);
    try {
      // A first start migrates the database; the records go in while no server runs.
      await (await startSwitchboard({ database })).stop();
      const seeded = Date.now();
      const rollupRows = await seed(database, now);
      console.log(`${dialect}: seeded ${fmt(RECORDS)} records (${fmt(rollupRows)} rollup rows) in ${fmt((Date.now() - seeded) / 1000)} s`);
      const server = await startSwitchboard({ database });
      try {
        for (const [name, query] of queries) {
          const get = () => fetch(`${server.url}/api/v1/usage?${query}`, { headers: { authorization: `Bearer ${server.adminKey}` } });
          const first = await get();
          if (!first.ok) throw new Error(`${query}: ${first.status} ${await first.text()}`);
          const times: number[] = [];
          const cpuBefore = server.cpuMs();
          for (let i = 0; i < QUERIES; i++) {
            const started = performance.now();
            await (await get()).arrayBuffer();
            times.push(performance.now() - started);
          }
          const cpu = (server.cpuMs() - cpuBefore) / QUERIES;
          lines.push(`| ${dialect} | ${fmt(rollupRows)} | ${name} | ${fmt(median(times), 1)} | ${fmt(cpu, 1)} |`);
        }
      } finally {
        await server.stop();
      }
    } finally {
      await database.drop();
    }
  }
  lines.push('', 'Target: < 50 ms p50 for every query at 10,000,000 records.', '');
  record('usage', lines.join('\n'));
  console.log(lines.join('\n'));
}
