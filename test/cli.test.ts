import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Api } from './helpers/api.js';
import { createTestDatabase, type TestDatabase } from './helpers/database.js';
import { describeEachDialect } from './helpers/dialects.js';
import { startServer } from './helpers/server.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');
/** The server takes a second signal within this long of the first for the same stop (src/cli.ts). */
const REPEATED_SIGNAL_MS = 1_000;

function env(database: TestDatabase, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    SWITCHBOARD_DATA_DIR: database.dataDir,
    SWITCHBOARD_LOG_LEVEL: 'info',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...extra,
  };
}

/** Rejects if `promise` has not settled within `ms`. */
function within<T>(promise: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

interface Launched {
  child: ChildProcess;
  /** The URL the server logged once listening. */
  url: string;
  /** The exit code, or the signal that ended the process. */
  ended: Promise<number | NodeJS.Signals | null>;
  /** Resolves once the server has logged a message starting with `message`. */
  logged(message: string): Promise<void>;
  /** Kills whatever is left of the process group (a server orphaned by its launcher too). */
  end(): void;
}

/**
 * Starts a command that serves (the CLI, or `npm start`) in a process group of its own, as a
 * terminal's job, and resolves once the server listens.
 */
async function launch(command: string, args: string[], environment: NodeJS.ProcessEnv): Promise<Launched> {
  const child = spawn(command, args, { env: environment, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const ended = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const entries: { msg?: string; url?: string }[] = [];
  const log = new EventEmitter();
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      entries.push(JSON.parse(line));
    } catch {
      return; // npm's own lines
    }
    log.emit('entry');
  });
  child.once('close', () => log.emit('closed'));
  const find = <T>(pick: (entry: { msg?: string; url?: string }) => T | undefined, what: string) =>
    within(
      new Promise<T>((resolve, reject) => {
        const look = () => {
          for (const entry of entries) {
            const found = pick(entry);
            if (found !== undefined) return resolve(found);
          }
          if (child.exitCode !== null || child.signalCode !== null) reject(new Error(`exited before logging ${what}`));
        };
        log.on('entry', look).on('closed', look);
        look();
      }),
      what,
    );
  const end = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // nothing left
    }
  };
  try {
    const url = await find((entry) => entry.url, 'its URL');
    const logged = (message: string) => find((entry) => (entry.msg?.startsWith(message) ? true : undefined), `'${message}'`).then(() => {});
    return { child, url, ended, logged, end };
  } catch (err) {
    end();
    throw err;
  }
}

/**
 * A POST whose body is held back: `started` once the server has read its headers (its
 * `100 Continue`), answered once `finish` sends the body.
 */
function holdRequest(url: string, adminKey: string): { started: Promise<void>; finish(): void; status: Promise<number> } {
  const body = JSON.stringify({ agent_id: 'held-agent' });
  const request = http.request(`${url}/api/v1/auth/keys`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${adminKey}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
      expect: '100-continue',
    },
  });
  const status = new Promise<number>((resolve, reject) => {
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
  status.catch(() => {}); // awaited by the test that expects it
  const started = within(new Promise<void>((resolve) => request.once('continue', resolve)), 'the 100 Continue');
  request.flushHeaders();
  return { started, finish: () => request.end(body), status };
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
    // exec: npm's shell gives way to the server, so the signals npm forwards reach it.
    expect(start).toBe(`exec node ${flags.join(' ')} dist/cli.js serve`);
    const { stdout } = await run(process.execPath, [...flags, CLI, '--help']);
    expect(stdout).toMatch(/^Usage:/);
  });

  it('takes -h for --help, at the top and for a command', async () => {
    expect((await run(process.execPath, [CLI, '-h'])).stdout).toBe((await run(process.execPath, [CLI, '--help'])).stdout);
    expect((await run(process.execPath, [CLI, 'keys', '-h'])).stdout).toBe((await run(process.execPath, [CLI, 'keys', '--help'])).stdout);
    // Four CLI processes.
  }, 60_000);

  it.each([['--version'], ['-v']])('prints the package version for %s', async (flag) => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    expect((await run(process.execPath, [CLI, flag])).stdout).toBe(`${version}\n`);
  });

  it('rejects unknown commands with exit code 2', async () => {
    await expect(run(process.execPath, [CLI, 'frobnicate'])).rejects.toMatchObject({ code: 2 });
  });
});

describe('switchboard serve on a SQLite data directory', () => {
  it('refuses a second server on it, and starts again once the first was killed (SIGKILL)', async () => {
    const database = await createTestDatabase('sqlite');
    try {
      const first = await launch(process.execPath, [CLI, 'serve', '--port', '0'], env(database));
      try {
        const refused = await run(process.execPath, [CLI, 'serve', '--port', '0'], { env: env(database), timeout: 15_000 }).then(
          () => null,
          (err: { code: number; stderr: string }) => err,
        );
        expect(refused?.code).toBe(1);
        expect(refused?.stderr).toContain(
          `switchboard: another Switchboard server (pid ${first.child.pid}) is serving from the data directory ${database.dataDir}`,
        );
        // The first one was not disturbed.
        expect((await fetch(`${first.url}/readyz`)).status).toBe(200);
        first.child.kill('SIGKILL');
        expect(await within(first.ended, 'the first server to die')).toBe('SIGKILL');
      } finally {
        first.end();
      }
      // Its lock died with it.
      const second = await launch(process.execPath, [CLI, 'serve', '--port', '0'], env(database));
      try {
        expect((await fetch(`${second.url}/readyz`)).status).toBe(200);
        second.child.kill('SIGTERM');
        expect(await within(second.ended, 'the second server to exit')).toBe(0);
      } finally {
        second.end();
      }
      expect(fs.existsSync(path.join(database.dataDir, 'switchboard.pid'))).toBe(false);
    } finally {
      await database.drop();
    }
    // Three servers started, one after another.
  }, 120_000);
});

describeEachDialect('switchboard CLI', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database.drop();
  });
  const adminKey = () => fs.readFileSync(path.join(database.dataDir, 'admin.key'), 'utf8').trim();

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

  it('grants, lists and removes group memberships', async () => {
    await run(process.execPath, [CLI, 'migrate'], { env: env(database) });
    const cli = async (...args: string[]) =>
      JSON.parse((await run(process.execPath, [CLI, 'groups', ...args], { env: env(database) })).stdout);
    expect(await cli('add', 'finance', 'cli-member')).toMatchObject({
      group: 'finance',
      agent_id: 'cli-member',
      granted_by: 'cli',
      created: true,
    });
    expect(await cli('add', 'finance', 'cli-member')).toMatchObject({ created: false });
    expect(await cli('list')).toEqual([{ group: 'finance', members: ['cli-member'] }]);
    expect((await cli('list', 'finance')).map((m: { agent_id: string }) => m.agent_id)).toEqual(['cli-member']);
    expect(await cli('remove', 'finance', 'cli-member')).toEqual({ group: 'finance', agent_id: 'cli-member', deleted: true });
    expect(await cli('list')).toEqual([]);
    await expect(run(process.execPath, [CLI, 'groups', 'remove', 'finance', 'cli-member'], { env: env(database) })).rejects.toMatchObject({
      code: 2,
    });
    await expect(run(process.execPath, [CLI, 'groups', 'add', 'bad name', 'cli-member'], { env: env(database) })).rejects.toMatchObject({
      code: 2,
    });
    // Nine CLI processes, each opening and migrating the database.
  }, 120_000);

  it('creates users (a password printed once, or read from stdin), lists and disables them', async () => {
    // A database of its own: the server started below adds an admin key, after which `serve`
    // in the tests that follow would not generate one.
    const own = await createTestDatabase(dialect);
    await run(process.execPath, [CLI, 'migrate'], { env: env(own) });
    const users = (...args: string[]) => run(process.execPath, [CLI, 'users', ...args], { env: env(own) });
    const generated = JSON.parse((await users('create', '--username', 'cli-ada', '--role', 'approver')).stdout);
    expect(generated).toMatchObject({ username: 'cli-ada', role: 'approver', has_password: true });
    expect(generated.password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const piped = run(process.execPath, [CLI, 'users', 'create', '--username', 'cli-bob', '--role', 'viewer', '--password-stdin'], {
      env: env(own),
    });
    piped.child.stdin!.end('a password from stdin\n');
    const fromStdin = JSON.parse((await piped).stdout);
    expect(fromStdin).not.toHaveProperty('password');
    expect(JSON.parse((await users('list')).stdout).map((u: { username: string }) => u.username)).toEqual(['cli-ada', 'cli-bob']);
    expect(JSON.parse((await users('disable', 'cli-ada')).stdout)).toMatchObject({ username: 'cli-ada', disabled: true });

    // The passwords work; the disabled user's does not.
    const server = await startServer(dialect, { database: own });
    try {
      const signIn = (username: string, password: string) =>
        new Api(server.url, null).post('/api/v1/auth/sessions', { username, password });
      expect((await signIn('cli-bob', 'a password from stdin')).status).toBe(201);
      expect((await signIn('cli-ada', generated.password)).status).toBe(401);
    } finally {
      await server.close();
      await own.drop();
    }
  }, 120_000);

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
    const server = await launch(process.execPath, [CLI, 'serve', '--port', '0'], env(database));
    try {
      const keyFile = path.join(database.dataDir, 'admin.key');
      expect(fs.statSync(keyFile).mode & 0o777).toBe(0o600);
      const listed = await fetch(`${server.url}/api/v1/auth/keys`, { headers: { authorization: `Bearer ${adminKey()}` } });
      expect(listed.status).toBe(200);

      // A request whose body is held back until the server is stopping must still be answered
      // before the process exits 0.
      const held = holdRequest(server.url, adminKey());
      await held.started;
      server.child.kill('SIGTERM');
      await server.logged('shutting down');
      held.finish();
      expect(await held.status).toBe(201);
      expect(await within(server.ended, 'the server to exit')).toBe(0);
      await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
    } finally {
      server.end();
    }
  });

  it('exits at once (143) on a second SIGTERM, a second or more after the first, without waiting for the drain', async () => {
    const server = await launch(process.execPath, [CLI, 'serve', '--port', '0'], env(database));
    try {
      const held = holdRequest(server.url, adminKey());
      await held.started;
      server.child.kill('SIGTERM');
      await server.logged('shutting down');
      // The server takes a repeat within a second for the same stop delivered twice.
      await new Promise((resolve) => setTimeout(resolve, REPEATED_SIGNAL_MS + 100));
      server.child.kill('SIGTERM');
      expect(await within(server.ended, 'the server to exit')).toBe(143);
      await server.logged('second signal');
      await expect(held.status).rejects.toThrow();
    } finally {
      server.end();
    }
  });

  it('stops the server of `npm start` when npm gets SIGTERM', async () => {
    const npm = await launch('npm', ['start'], env(database, { SWITCHBOARD_PORT: '0', HOME: os.homedir() }));
    try {
      npm.child.kill('SIGTERM');
      await npm.logged('shutting down');
      expect(await within(npm.ended, 'npm to exit')).toBe(0);
      await expect(fetch(`${npm.url}/healthz`)).rejects.toThrow();
    } finally {
      npm.end();
    }
  });

  it('drains once and exits 0 when Ctrl-C signals `npm start` and its server together', async () => {
    const npm = await launch('npm', ['start'], env(database, { SWITCHBOARD_PORT: '0', HOME: os.homedir() }));
    try {
      const held = holdRequest(npm.url, adminKey());
      await held.started;
      // To the process group, as a terminal does: npm and the server get it, and npm forwards
      // it to the server once more.
      process.kill(-npm.child.pid!, 'SIGINT');
      await npm.logged('shutting down');
      held.finish();
      expect(await held.status).toBe(201);
      expect(await within(npm.ended, 'npm to exit')).toBe(0);
      await expect(fetch(`${npm.url}/healthz`)).rejects.toThrow();
    } finally {
      npm.end();
    }
  });
});
