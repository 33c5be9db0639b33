import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect } from 'vitest';
import { DIALECTS, postgresTestUrl, type Dialect } from './database.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The test files (or folders) that also run on 'sqlite-no-group-commit' (SQLite with
 * SWITCHBOARD_SQLITE_GROUP_COMMIT=off): the store-heavy suites, where the two SQLite drivers
 * differ in what a transaction shares with its neighbours (its group, its COMMIT, the order of
 * answers). The other suites reach the same stores through HTTP and prove little more with a
 * third run, which would add about half again to `npm test` (~7 min on two cores; CI's limit is
 * 15): these files' third run measured 97 s of the suite's 750 s of tests (under 1 min of wall
 * time on two workers).
 */
const GROUP_COMMIT_OFF_SUITES = [
  'test/db/',
  'test/discovery/ports.test.ts',
  'test/discovery/capabilities.test.ts',
  'test/messaging/messaging.test.ts',
  'test/messaging/durability.test.ts',
  'test/coordination/',
  'test/tasks/',
];

function runsWithGroupCommitOff(): boolean {
  const file = path
    .relative(ROOT, expect.getState().testPath ?? '')
    .split(path.sep)
    .join('/');
  return GROUP_COMMIT_OFF_SUITES.some((suite) => (suite.endsWith('/') ? file.startsWith(suite) : file === suite));
}

/**
 * Runs a suite once per storage backend (house style: every store test on both), and for the
 * files of GROUP_COMMIT_OFF_SUITES once more on SQLite without group commit. PostgreSQL runs
 * on SWITCHBOARD_TEST_DATABASE_URL, or the local PostgreSQL when it answers (global-setup.ts,
 * which says loudly, once, when neither does); under CI its absence is a failure.
 */
export function describeEachDialect(title: string, suite: (dialect: Dialect) => void): void {
  const dialects: Dialect[] = runsWithGroupCommitOff() ? ['sqlite', 'sqlite-no-group-commit', 'postgres'] : DIALECTS;
  for (const dialect of dialects) {
    if (dialect === 'postgres' && !postgresTestUrl()) {
      if (process.env.CI) {
        throw new Error('CI is set but SWITCHBOARD_TEST_DATABASE_URL is not: PostgreSQL tests would be skipped');
      }
      describe.skip(`${title} [postgres: no PostgreSQL, see the line at the start of the run]`, () => suite(dialect));
      continue;
    }
    describe(`${title} [${dialect}]`, () => suite(dialect));
  }
}
