import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const FIXTURES = 'test/fixtures/open-handles';

interface FileResult {
  status: 'passed' | 'failed';
  message: string;
}

/** Runs the fixtures in a vitest of their own (helpers/open-handles.ts as its setup file). */
async function runFixtures(): Promise<Map<string, FileResult>> {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'open-handles-')), 'results.json');
  try {
    const child = spawn(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--config',
        `${FIXTURES}/vitest.config.ts`,
        '--reporter=json',
        `--outputFile=${out}`,
      ],
      { cwd: ROOT, stdio: 'ignore', env: { ...process.env, CI: 'true' } },
    );
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code, 'the fixtures that leak fail their run').toBe(1);
    const report = JSON.parse(fs.readFileSync(out, 'utf8')) as {
      testResults: { name: string; status: FileResult['status']; message: string }[];
    };
    return new Map(report.testResults.map((r) => [path.basename(r.name, '.fixture.ts'), { status: r.status, message: r.message }]));
  } finally {
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  }
}

describe('the open-handle check (test/helpers/open-handles.ts)', () => {
  let results: Map<string, FileResult>;
  beforeAll(async () => {
    results = await runFixtures();
  }, 120_000);

  const failsNaming = (fixture: string, ...named: (string | RegExp)[]) => {
    const result = results.get(fixture);
    expect(result?.status, `${fixture}: ${result?.message}`).toBe('failed');
    expect(result!.message).toContain(`${FIXTURES}/${fixture}.fixture.ts left open after its last test`);
    for (const name of named) expect(result!.message).toMatch(name);
    // The fixtures share one worker: what an earlier one left open is not this one's.
    for (const other of results.keys()) if (other !== fixture) expect(result!.message).not.toContain(`${other}.fixture.ts`);
  };

  it('passes a file that closes everything it opened', () => {
    expect(results.get('clean')).toEqual({ status: 'passed', message: '' });
  });

  it('names a timer left running, with where it was made', () => {
    failsNaming('timer', `a timer: setInterval(heartbeat, 60000), opened at ${path.join(ROOT, FIXTURES)}/timer.fixture.ts:4:3`);
  });

  it('names a server still listening and a connection still open', () => {
    failsNaming('server', /a server listening on 127\.0\.0\.1:\d+, opened at .*server\.fixture\.ts:7/, '1 × TCPServerWrap');
    failsNaming('socket', '2 × TCPSocketWrap: a TCP socket');
  });

  it('names a child process and a worker thread still running', () => {
    failsNaming('child', /a child process \(pid \d+: .*process\.stdin\.resume\(\)\), opened at .*child\.fixture\.ts/, '1 × ProcessWrap');
    failsNaming('worker', /a worker thread \(id \d+\)/);
  });

  it('names a SQLite database and a pg pool left open', () => {
    failsNaming('sqlite', /a better-sqlite3 Database \(:memory:\), opened at .*sqlite\.fixture\.ts:5/);
    if (process.env.SWITCHBOARD_TEST_DATABASE_URL) failsNaming('pg', /a pg pool \(1 clients\), opened at .*pg\.fixture\.ts/, 'a pg client');
    else expect(results.get('pg')?.status, 'the pg fixture skips its test without a PostgreSQL').toBe('passed');
  });
});
