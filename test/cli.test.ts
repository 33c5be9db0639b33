import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { describeEachDialect } from './helpers/dialects.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');

function env(database: TestDatabase, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    SWITCHBOARD_DATA_DIR: database.dataDir,
    SWITCHBOARD_LOG_LEVEL: 'info',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...extra,
  };
}

describe('switchboard --help', () => {
  it.each([[[]], [['serve']], [['migrate']], [['keys']]])('prints usage for %j', async (args) => {
    const { stdout } = await run(process.execPath, [CLI, ...args, '--help']);
    expect(stdout).toMatch(/^Usage:/);
  });

  it('names its serving flags on its first line, the same ones `npm start` passes', async () => {
    const shebang = fs.readFileSync(CLI, 'utf8').split('\n')[0]!;
    const flags = shebang.split(' ').filter((arg) => arg.startsWith('--'));
    expect(flags).toEqual(['--min-semi-space-size=32', '--max-semi-space-size=32']);
    const start = JSON.parse(fs.readFileSync('package.json', 'utf8')).scripts.start as string;
    expect(start).toBe(`node ${flags.join(' ')} dist/cli.js serve`);
    const { stdout } = await run(process.execPath, [...flags, CLI, '--help']);
    expect(stdout).toMatch(/^Usage:/);
  });

  it('rejects unknown commands with exit code 2', async () => {
    await expect(run(process.execPath, [CLI, 'frobnicate'])).rejects.toMatchObject({ code: 2 });
  });
});

describeEachDialect('switchboard CLI', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database.drop();
  });

  it('migrates, then finds nothing to do the second time', async () => {
    const first = await run(process.execPath, [CLI, 'migrate'], { env: env(database) });
    expect(first.stdout).toContain('migrations applied');
    const second = await run(process.execPath, [CLI, 'migrate'], { env: env(database) });
    expect(second.stdout).toContain('database is up to date');
  });

  it('creates, lists and revokes keys', async () => {
    const created = JSON.parse(
      (await run(process.execPath, [CLI, 'keys', 'create', '--agent', 'cli-agent', '--name', 'from cli'], { env: env(database) })).stdout,
    );
    expect(created).toMatchObject({ agent_id: 'cli-agent', role: 'agent', name: 'from cli' });
    expect(created.key).toMatch(/^sk_/);
    const listed = JSON.parse((await run(process.execPath, [CLI, 'keys', 'list'], { env: env(database) })).stdout);
    expect(listed.map((k: { id: string }) => k.id)).toContain(created.id);
    await run(process.execPath, [CLI, 'keys', 'revoke', created.id], { env: env(database) });
    const after = JSON.parse((await run(process.execPath, [CLI, 'keys', 'list'], { env: env(database) })).stdout);
    expect(after.map((k: { id: string }) => k.id)).not.toContain(created.id);
    await expect(run(process.execPath, [CLI, 'keys', 'create'], { env: env(database) })).rejects.toMatchObject({ code: 2 });
  });

  it('names the database it uses on stderr and refuses one Switchboard never used unless --create', async () => {
    const fresh = await createTestDatabase(dialect);
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-cwd-'));
    try {
      // SQLite: nothing configured, so ./data of the working directory. PostgreSQL: a new empty
      // database, named with a password that must not be printed.
      let shown: string;
      const selected: Record<string, string> = {};
      if (fresh.databaseUrl) {
        const url = new URL(fresh.databaseUrl);
        url.password = 'hunter2';
        selected.DATABASE_URL = url.toString();
        url.password = '***';
        shown = `PostgreSQL ${url.toString()}`;
      } else {
        shown = `SQLite ${path.join(cwd, 'data', 'switchboard.db')}`;
      }
      const options = { cwd, env: { PATH: process.env.PATH, ...selected } };
      const refused = await run(process.execPath, [CLI, 'keys', 'list'], options).then(
        () => null,
        (err: { code: number; stderr: string }) => err,
      );
      expect(refused?.code).toBe(2);
      expect(refused?.stderr).toContain(`switchboard: database ${shown}\n`);
      expect(refused?.stderr).toMatch(/pass --create/);
      expect(refused?.stderr).not.toContain('hunter2');
      expect(fs.existsSync(path.join(cwd, 'data'))).toBe(false);

      const created = await run(process.execPath, [CLI, 'keys', 'create', '--role', 'admin', '--create'], options);
      expect(created.stderr).toContain(`switchboard: database ${shown}\n`);
      expect(JSON.parse(created.stdout)).toMatchObject({ role: 'admin' });
      const listed = await run(process.execPath, [CLI, 'keys', 'list'], options);
      expect(JSON.parse(listed.stdout)).toHaveLength(1);
    } finally {
      await fresh.drop();
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('serves with a generated admin key (0600), drains in-flight requests on SIGTERM and exits 0', async () => {
    const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], { env: env(database), stdio: ['ignore', 'pipe', 'pipe'] });
    const url = await new Promise<string>((resolve, reject) => {
      const lines = readline.createInterface({ input: child.stdout });
      lines.on('line', (line) => {
        const parsed = JSON.parse(line) as { url?: string };
        if (parsed.url) resolve(parsed.url);
      });
      child.once('exit', (code) => reject(new Error(`exited ${code}`)));
    });
    const keyFile = path.join(database.dataDir, 'admin.key');
    expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
    const adminKey = fs.readFileSync(keyFile, 'utf8').trim();
    const listed = await fetch(`${url}/api/v1/auth/keys`, { headers: { authorization: `Bearer ${adminKey}` } });
    expect(listed.status).toBe(200);

    // Start a request, hold its body back, stop the server, then finish the body: the
    // request must still be answered before the process exits 0.
    const body = JSON.stringify({ agent_id: 'late-agent' });
    const target = new URL(`${url}/api/v1/auth/keys`);
    const response = new Promise<number>((resolve, reject) => {
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => {
        child.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(5)), 200);
      }, 100);
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    expect(await response).toBe(201);
    expect(await exited).toBe(0);
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
