import { describe } from 'vitest';
import { DIALECTS, postgresTestUrl, type Dialect } from './database.js';

let warned = false;

/**
 * Runs a suite once per storage backend (house style: every store test on both). PostgreSQL
 * runs when SWITCHBOARD_TEST_DATABASE_URL is set; locally it is skipped with a message, and
 * under CI its absence is a failure, never a silent skip.
 */
export function describeEachDialect(title: string, suite: (dialect: Dialect) => void): void {
  for (const dialect of DIALECTS) {
    if (dialect === 'postgres' && !postgresTestUrl()) {
      if (process.env.CI) {
        throw new Error('CI is set but SWITCHBOARD_TEST_DATABASE_URL is not: PostgreSQL tests would be skipped');
      }
      if (!warned) {
        warned = true;
        console.warn('SWITCHBOARD_TEST_DATABASE_URL is unset: skipping the PostgreSQL runs of the suites');
      }
      describe.skip(`${title} [postgres: SWITCHBOARD_TEST_DATABASE_URL unset]`, () => suite(dialect));
      continue;
    }
    describe(`${title} [${dialect}]`, () => suite(dialect));
  }
}
