/**
 * Issue 20: hostile requests over every operation of the served OpenAPI document, against the
 * built server on SQLite and on PostgreSQL (when SWITCHBOARD_TEST_DATABASE_URL is set). Each
 * backend gets ROUNDS rounds; a round seeds fresh objects (the fuzzed deletes remove them) and
 * sends PER_OPERATION requests to each operation, 8 at a time, from test/fuzz/requests.ts's
 * arbitraries with fixed seeds. Counted: 5xx answers, errors outside the envelope (or without
 * their request id), requests that got no answer. Goal: zero of each.
 */
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { DIALECTS, postgresTestUrl, type Dialect } from '../test/helpers/database.js';
import { describeRequest, operationsOf, problemWith, requestFor, seedObjects, send, type FuzzRequest } from '../test/fuzz/requests.js';
import { fmt, machine, record, ROOT, startSwitchboard } from './lib.js';

const ROUNDS = 10;
const PER_OPERATION = 10;
const IN_FLIGHT = 8;
const SEED = 20;

interface Tally {
  dialect: Dialect;
  operations: number;
  requests: number;
  byStatus: Map<number, number>;
  problems: string[];
  unanswered: string[];
  seconds: number;
}

async function fuzz(dialect: Dialect): Promise<Tally> {
  const server = await startSwitchboard({
    dialect,
    env: { SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '1000000000', SWITCHBOARD_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' },
  });
  const started = Date.now();
  const tally: Tally = { dialect, operations: 0, requests: 0, byStatus: new Map(), problems: [], unanswered: [], seconds: 0 };
  try {
    const doc = (await (await fetch(`${server.url}/api/v1/openapi.json`)).json()) as Parameters<typeof operationsOf>[0];
    const operations = operationsOf(doc);
    tally.operations = operations.length;
    for (let round = 0; round < ROUNDS; round++) {
      const seeds = await seedObjects(server.url, server.adminKey);
      const requests: FuzzRequest[] = operations.flatMap((operation, i) =>
        fc.sample(requestFor(operation, seeds, server.adminKey), { seed: SEED + round * 1_000 + i, numRuns: PER_OPERATION }),
      );
      let next = 0;
      const worker = async () => {
        while (next < requests.length) {
          const request = requests[next++]!;
          tally.requests++;
          try {
            const answer = await send(server.url, request, 35_000);
            tally.byStatus.set(answer.status, (tally.byStatus.get(answer.status) ?? 0) + 1);
            const problem = problemWith(answer, request);
            if (problem) tally.problems.push(`${describeRequest(request)} → ${problem}`);
          } catch (err) {
            tally.unanswered.push(`${describeRequest(request)} → ${(err as Error).message}`);
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
      console.log(
        `${dialect} round ${round + 1}/${ROUNDS}: ${tally.requests} requests, ${tally.problems.length} problems, ${tally.unanswered.length} unanswered`,
      );
    }
  } finally {
    tally.seconds = (Date.now() - started) / 1000;
    await server.stop();
    await server.database.drop();
  }
  return tally;
}

export default async function fuzzSuite(): Promise<void> {
  const dialects = DIALECTS.filter((d) => d === 'sqlite' || postgresTestUrl());
  const tallies: Tally[] = [];
  for (const dialect of dialects) tallies.push(await fuzz(dialect));
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  const count = (t: Tally, test: (status: number) => boolean) =>
    [...t.byStatus].filter(([s]) => test(s)).reduce((sum, [, n]) => sum + n, 0);
  const lines = [
    '## Fuzz (issue 20): hostile requests over every operation',
    '',
    `Machine: ${machine()}. Command: \`npm run build && SWITCHBOARD_TEST_DATABASE_URL=postgres://… npm run bench -- fuzz\` at ${commit} (${new Date().toISOString().slice(0, 10)}).`,
    `Each backend: ${ROUNDS} rounds × ${PER_OPERATION} requests per operation of the served OpenAPI document, ${IN_FLIGHT} in flight, fixed seeds (test/fuzz/requests.ts: NUL characters, numbers no column holds, JSON nested 70 and 5,000 deep, wrong types, long strings, bad %-escapes, missing or wrong credentials), fresh objects seeded each round.`,
    '',
    '| backend | operations | requests | 2xx | 4xx | 5xx | errors outside the envelope or without their request id | no answer | seconds |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...tallies.map(
      (t) =>
        `| ${t.dialect} | ${t.operations} | ${fmt(t.requests)} | ${fmt(count(t, (s) => s < 300))} | ${fmt(count(t, (s) => s >= 400 && s < 500))} | ${fmt(count(t, (s) => s >= 500))} | ${t.problems.filter((p) => !/→ 5\d\d:/.test(p)).length} | ${t.unanswered.length} | ${fmt(t.seconds)} |`,
    ),
    '',
    `Statuses: ${tallies
      .map(
        (t) =>
          `${t.dialect} ${[...t.byStatus]
            .sort(([a], [b]) => a - b)
            .map(([s, n]) => `${s}×${n}`)
            .join(', ')}`,
      )
      .join('; ')}.`,
  ];
  const problems = tallies.flatMap((t) => [...t.problems, ...t.unanswered].map((p) => `${t.dialect}: ${p}`));
  if (problems.length > 0)
    lines.push('', 'Problems (first 20):', '', ...problems.slice(0, 20).map((p) => `- \`${p.replaceAll('`', "'")}\``));
  record('fuzz', lines.join('\n'));
  console.log(lines.join('\n'));
}
