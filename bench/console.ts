/**
 * Issue 23 §7: (a) the runs list with 10,000 runs renders its first page in ≤ 1 s, measured in
 * Chromium with the Performance API (navigation start → the first row in the DOM), cold (a fresh
 * context: no cache, a new page load) and warm (a reload); (b) the console's JavaScript,
 * gzipped, ≤ 350 KB in all. 127.0.0.1 only; seeding is bounded in count and time.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';
import { postgresTestUrl } from '../test/helpers/database.js';
import { fmt, machine, median, record, ROOT, startSwitchboard, type SwitchboardProcess } from './lib.js';

const RUNS = 10_000;
const SEED_CLIENTS = 16;
const SEED_LIMIT_MS = 300_000;
const LOADS = 5;
const BUDGET_MS = 1000;
const JS_BUDGET_KB = 350;
const CHROMIUM = '/usr/bin/chromium';
const ASSETS = path.join(ROOT, 'dist', 'console', 'assets');
/** The lists a person opens: the first page, a status filter, a deep page (offset 9,975). */
const PAGES = ['/console/runs', '/console/runs?status=running', `/console/runs?page=${RUNS / 25}`];

async function call(server: SwitchboardProcess, method: string, url: string, body?: unknown) {
  const res = await fetch(server.url + url, {
    method,
    headers: { authorization: `Bearer ${server.adminKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<{ data: { id: string } }>;
}

/** 10,000 runs of two plans through the API: half finish at once (a transform), half wait on an agent that never comes. */
async function seed(server: SwitchboardProcess): Promise<number> {
  await call(server, 'POST', '/api/v1/coordination/plans', {
    alias: 'quick',
    steps: [{ id: 'sum', type: 'transform', output: { n: '{{input.n}}' } }],
  });
  await call(server, 'POST', '/api/v1/coordination/plans', {
    alias: 'slow',
    steps: [
      { id: 'work', type: 'agent', agent: 'absent-worker', input: { n: '{{input.n}}' } },
      { id: 'after', type: 'transform', output: {}, depends_on: ['work'] },
    ],
  });
  const started = performance.now();
  const deadline = Date.now() + SEED_LIMIT_MS;
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CLIENTS }, async () => {
      for (let n = next++; n < RUNS && Date.now() < deadline; n = next++) {
        await call(server, 'POST', '/api/v1/coordination/runs', { plan_id: n % 2 === 0 ? 'quick' : 'slow', input: { n } });
      }
    }),
  );
  if (next < RUNS) throw new Error(`seeding stopped at ${next} runs after ${SEED_LIMIT_MS} ms`);
  return (RUNS / (performance.now() - started)) * 1000;
}

/** Milliseconds from the navigation's start to the first run row in the DOM, per load. */
async function firstRow(browser: Browser, server: SwitchboardProcess, url: string): Promise<{ cold: number[]; warm: number[] }> {
  const cold: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    // Signed in already (the key in session storage, as after the sign-in form); a row is watched for from the first byte.
    await context.addInitScript({
      content: `sessionStorage.setItem('switchboard.console.apiKey', ${JSON.stringify(server.adminKey)});
        new MutationObserver((_, observer) => {
          if (document.querySelector('tr[data-run]')) {
            window.firstRowAt = performance.now();
            observer.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });`,
    });
    const page = await context.newPage();
    for (const into of [cold, warm]) {
      if (into === cold) await page.goto(server.url + url);
      else await page.reload();
      await page.waitForFunction('window.firstRowAt !== undefined', undefined, { timeout: 30_000 });
      into.push(await page.evaluate<number>('window.firstRowAt'));
    }
    await context.close();
  }
  return { cold, warm };
}

/** Milliseconds the API takes to answer the list request behind `url` (as the page sends it), per request. */
async function apiTimes(server: SwitchboardProcess, url: string): Promise<number[]> {
  const search = new URL(url, server.url).searchParams;
  const page = Number(search.get('page') ?? 1);
  const query = `limit=25&offset=${(page - 1) * 25}${search.get('status') ? `&status=${search.get('status')}` : ''}`;
  const times: number[] = [];
  for (let i = 0; i < LOADS; i++) {
    const started = performance.now();
    await call(server, 'GET', `/api/v1/coordination/runs?${query}`);
    times.push(performance.now() - started);
  }
  return times;
}

/** Every JS asset of the built console, gzipped as a server would (default level) and at level 9. */
function scriptSizes() {
  const files = fs.readdirSync(ASSETS).filter((f) => f.endsWith('.js'));
  const sizes = files.map((f) => {
    const bytes = fs.readFileSync(path.join(ASSETS, f));
    return { file: f, raw: bytes.length, gzip: zlib.gzipSync(bytes).length, gzip9: zlib.gzipSync(bytes, { level: 9 }).length };
  });
  return sizes.sort((a, b) => b.gzip - a.gzip);
}

export default async function consoleBench(): Promise<void> {
  if (!fs.existsSync(ASSETS)) throw new Error('dist/console is missing: run `npm run build` first');
  const dialects = postgresTestUrl() ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);
  const loadBefore = os.loadavg()[0]!;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  const rows: string[] = [];
  const seeding: string[] = [];
  let worst = 0;
  try {
    for (const dialect of dialects) {
      const server = await startSwitchboard({ dialect });
      try {
        const rate = await seed(server);
        seeding.push(`${dialect} ${fmt(rate)} runs/s`);
        for (const url of PAGES) {
          const { cold, warm } = await firstRow(browser, server, url);
          const api = await apiTimes(server, url);
          worst = Math.max(worst, Math.max(...cold));
          rows.push(
            `| ${dialect} | \`${url.replace('/console', '')}\` | ${fmt(median(cold))} | ${fmt(Math.max(...cold))} | ${fmt(median(warm))} | ${fmt(median(api), 1)} |`,
          );
          console.log(dialect, url, { cold, warm });
        }
      } finally {
        await server.stop();
      }
    }
  } finally {
    await browser.close();
  }
  const loadAfter = os.loadavg()[0]!;
  const sizes = scriptSizes();
  const total = (key: 'raw' | 'gzip' | 'gzip9') => sizes.reduce((sum, s) => sum + s[key], 0) / 1024;
  const command = `npm run build && ${dialects.length > 1 ? 'SWITCHBOARD_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test ' : ''}npm run bench -- console`;
  record(
    'console',
    `## Console (issue 23 §7): the runs list with ${fmt(RUNS)} runs, and the console's JavaScript

Machine: ${machine()}. Command: \`${command}\` (${new Date().toISOString().slice(0, 10)}). Chromium ${browser.version()}, headless, 1280×800.
1-minute load average ${fmt(loadBefore, 2)} at the start, ${fmt(loadAfter, 2)} at the end (the machine is shared: other work runs beside the benchmark).

Seeding: ${fmt(RUNS)} POST /api/v1/coordination/runs from ${SEED_CLIENTS} clients (half finish at once, half wait on an agent): ${seeding.join(', ')}.

### (a) First page of runs: navigation start → first row in the DOM (Performance API), ${LOADS} loads each

Cold: a fresh browser context (no cache: the page, its scripts, sign-in check, runs and plans requests). Warm: a reload of that page.

| backend | page | cold median ms | cold max ms | warm median ms | API median ms (the list request alone) |
|---|---|---:|---:|---:|---:|
${rows.join('\n')}

Slowest cold load: **${fmt(worst)} ms** (target ≤ ${BUDGET_MS} ms: ${worst <= BUDGET_MS ? 'met' : 'NOT met'}).

### (b) The console's JavaScript (\`dist/console/assets/*.js\`)

| file | raw KB | gzip KB | gzip -9 KB |
|---|---:|---:|---:|
${sizes.map((s) => `| ${s.file.replace(/-[\w-]{8}\.js$/, '.js')} | ${fmt(s.raw / 1024, 1)} | ${fmt(s.gzip / 1024, 1)} | ${fmt(s.gzip9 / 1024, 1)} |`).join('\n')}
| **all** | ${fmt(total('raw'), 1)} | **${fmt(total('gzip'), 1)}** | ${fmt(total('gzip9'), 1)} |

Target ≤ ${JS_BUDGET_KB} KB gzipped in all: ${total('gzip') <= JS_BUDGET_KB ? 'met' : 'NOT met'}. The plan graph (React Flow, dagre) is its own chunk, loaded with the first graph shown.`,
  );
}
