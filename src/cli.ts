#!/usr/bin/env -S node --min-semi-space-size=32 --max-semi-space-size=32
// The flags give V8's young generation its full size from the start: every request leaves KiBs
// of short-lived objects, and with Node's defaults the server scavenged often and slowly (650
// against 100 ms of pauses in 8 s of authenticated reads at 50 connections, --trace-gc), ~10%
// of its CPU. V8 takes them only at startup; `npm start` and the benchmarks pass the same ones.
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createLogger } from './logger.js';
import path from 'node:path';
import { createApp } from './app.js';
import { blobMigrationFor, migrateFileBlobs } from './artifacts/index.js';
import { createAuditService } from './audit/index.js';
import { isPermission, permissionsOf, ROLE_NAMES, type Role } from './auth/permissions.js';
import { createAuthDomain, type AuthService, type UsersService } from './auth/index.js';
import { generatePassword } from './auth/passwords.js';
import { createAccessGroups } from './auth/groups/index.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { databaseOptions, describeDatabase, openDatabase, sqliteFile, type DatabaseHandle } from './db/database.js';
import { hasMigrated, migrateToLatest } from './db/migrate.js';
import { GROUP_PATTERN } from './discovery/schemas.js';
import { createEventLog } from './events/index.js';
import { AGENT_ID_PATTERN } from './http/schemas.js';
import { systemClock } from './kernel/clock.js';
import { openNotifier } from './db/notifiers.js';
import { serveStdio } from './mcp/stdio.js';

/** The actor of what the CLI does (key events). */
const CLI_ACTOR = 'cli';
/** The CLI in the audit log. */
const CLI_AUDIT_ACTOR = { kind: 'system', id: CLI_ACTOR, key_id: null };

const HELP: Record<string, string> = {
  main: `Usage: switchboard [command] [options]

Commands:
  serve                 Serve the API (default). Configuration comes from the environment:
                        SWITCHBOARD_HOST, SWITCHBOARD_PORT, SWITCHBOARD_DATA_DIR, DATABASE_URL, ...
  migrate               Apply pending database migrations and exit
  keys create           Create an API key and print it once
  keys list             List API keys
  keys revoke KEY_ID    Revoke an API key
  users create|list|disable|enable  Manage users (people: they sign in and decide human steps)
  groups add|remove|list  Grant, remove and list group memberships (who reads group shares)
  audit verify          Verify the audit log's hash chain (exit 1 when it is broken)
  blobs migrate         Move artifact contents from <data dir>/blobs into PostgreSQL
  mcp                   Serve the MCP tools over stdio, proxying to a running server

Run 'switchboard COMMAND --help' for a command's options.`,
  serve: `Usage: switchboard serve [--host HOST] [--port PORT] [--data-dir DIR]

Serves the whole API. Flags override SWITCHBOARD_HOST, SWITCHBOARD_PORT and SWITCHBOARD_DATA_DIR.
SIGTERM or SIGINT drains in-flight requests, stops workers and exits 0; a second one, a
second or more later, exits at once with 128 + the signal's number (143 for SIGTERM).`,
  migrate: `Usage: switchboard migrate

Applies pending migrations to the configured database (DATABASE_URL, else SQLite in the data dir).`,
  keys: `Usage:
  switchboard keys create --agent ID [--role agent|admin] [--scopes a,b] [--expires 30d] [--name NAME] [--create]
  switchboard keys create --role admin|operator|approver|viewer [--scopes a,b] [--expires 30d] [--name NAME] [--create]

--scopes narrows the role to these permissions (see GET /api/v1/auth/permissions); --expires
takes a duration (90m, 12h, 30d) or an ISO 8601 time, after which the key is refused (401).
  switchboard keys list [--all]
  switchboard keys revoke KEY_ID

Works directly on the configured database (DATABASE_URL, else SWITCHBOARD_DATA_DIR, default
./data), which it names on stderr; the server need not be running, and a running server sees
a revocation on its next request. It refuses a database Switchboard never used unless given
--create, so that a wrong directory does not get a new empty database.`,
  users: `Usage:
  switchboard users create --username U --role admin|operator|approver|viewer [--display-name NAME] [--password-stdin] [--create]
  switchboard users list
  switchboard users disable U     Its sessions end and its keys are refused, at once
  switchboard users enable U

create prints the user and a generated password, shown once; with --password-stdin it reads
the password (at least 12 characters) from stdin instead and prints none. Works directly on
the configured database, as 'keys' does; a running server sees a change on its next request.`,
  groups: `Usage:
  switchboard groups add GROUP AGENT_ID      Make the agent a member of the group
  switchboard groups remove GROUP AGENT_ID   Remove it (exit 1 when it was not a member)
  switchboard groups list [GROUP]            List the groups and their members, or one group's memberships

A share of an artifact with a group opens to the members granted here (or through
PUT /api/v1/auth/groups/{group}/members/{agent_id} with an admin key), never to the groups
agents declare on their capabilities, which only route. Works directly on the configured
database, as 'keys' does; a running server sees a change on its next request.`,
  audit: `Usage: switchboard audit verify

Walks the audit log of the configured database (DATABASE_URL, else SQLite in the data dir) from
its anchor (where retention last trimmed it) to its newest entry, a page at a time, and checks
that each entry's hash is sha256(prev_hash + its canonical JSON) and that its prev_hash is the
hash of the entry before. Prints {ok, checked, first_broken?, anchor}; exits 1 when broken.
Reads only: safe beside running servers.`,
  blobs: `Usage: switchboard blobs migrate

Moves the artifact contents a server kept as files under <data dir>/blobs into the PostgreSQL
database of DATABASE_URL (where cluster mode keeps them), so a single-node PostgreSQL install
can grow into a cluster: each file is streamed in, checked against its sha256 and then removed.
Run it on each machine that served with that data directory; it is safe beside running servers
(they read a file until it is moved) and a second run finishes what an interrupted one left.
Prints {"moved", "present", "corrupt"}; files whose bytes do not match their name stay.`,
  mcp: `Usage: switchboard mcp --url URL --key KEY

Serves the server's MCP tools over stdio (for desktop MCP clients), forwarding each call to
the server at URL (its /core/mcp endpoint) with the API key KEY. Clients of MCP 2025 (initialize)
and of MCP 2026-07-28 (stateless) are both served: the client's first message picks.
SWITCHBOARD_URL and SWITCHBOARD_API_KEY are used when the flags are absent.`,
};

function fail(message: string): never {
  console.error(`switchboard: ${message}`);
  process.exit(2);
}

/**
 * A signal this soon after the first is the same stop delivered twice, not an operator's second
 * one: a terminal's Ctrl-C reaches the whole process group, and `npm start` forwards it again.
 */
const REPEATED_SIGNAL_MS = 1_000;

async function serve(config: Config): Promise<void> {
  const app = await createApp({ config });
  await app.listen();
  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    const { logger } = app.platform;
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince < REPEATED_SIGNAL_MS) return;
      logger.warn({ signal }, 'second signal: exiting without finishing the shutdown');
      process.exit(128 + os.constants.signals[signal]);
    }
    stoppingSince = Date.now();
    logger.info({ signal }, 'shutting down (a second signal exits at once)');
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * Opens the configured database for an offline command, naming it on stderr. Unless `create`,
 * a database Switchboard never used is refused (checked before SQLite would create the file).
 */
async function openForCommand(config: Config, create: boolean): Promise<DatabaseHandle> {
  const options = databaseOptions(config, 1);
  console.error(`switchboard: database ${describeDatabase(options)}`);
  const refuse = () =>
    fail(
      "that database does not exist or Switchboard never used it. Run from the server's directory, " +
        "set SWITCHBOARD_DATA_DIR or DATABASE_URL to the server's, or pass --create to make a new one",
    );
  if (!create && !config.databaseUrl && !fs.existsSync(sqliteFile(config.dataDir))) refuse();
  const database = openDatabase(options);
  if (!create && !(await hasMigrated(database))) {
    await database.close();
    refuse();
  }
  return database;
}

async function withAuth<T>(config: Config, create: boolean, fn: (auth: AuthService, users: UsersService) => Promise<T>): Promise<T> {
  const logger = createLogger(config);
  const database = await openForCommand(config, create);
  try {
    await migrateToLatest(database);
    // The CLI is its own process: running servers see its revocations on their next request
    // (through PostgreSQL's NOTIFY, or SQLite's data version of the file).
    const notifier = openNotifier(database, { listen: config.pgListen }, logger);
    const audit = createAuditService({ database, clock: systemClock, config, logger, actor: CLI_AUDIT_ACTOR });
    const auth = createAuthDomain({
      database,
      clock: systemClock,
      notifier,
      audit,
      events: createEventLog(database, systemClock, notifier),
      sessionTtlMs: config.sessionTtlSeconds * 1000,
      secureCookie: false,
    });
    try {
      return await fn(auth.service, auth.users);
    } finally {
      auth.close();
      await notifier.close();
    }
  } finally {
    await database.close();
  }
}

const DURATION_UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--expires`: a duration from now (90m, 12h, 30d) or an ISO 8601 time. */
function expiryOf(text: string): string {
  const duration = /^(\d+)([mhd])$/.exec(text);
  if (duration) return new Date(Date.now() + Number(duration[1]) * DURATION_UNITS[duration[2]!]!).toISOString();
  const at = Date.parse(text);
  if (Number.isNaN(at)) fail('--expires takes a duration (90m, 12h, 30d) or an ISO 8601 time');
  return new Date(at).toISOString();
}

async function keys(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      agent: { type: 'string' },
      role: { type: 'string' },
      scopes: { type: 'string' },
      expires: { type: 'string' },
      name: { type: 'string' },
      all: { type: 'boolean' },
      create: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [action, ...rest] = positionals;
  const create = values.create ?? false;
  if (values.help || action === undefined) {
    console.log(HELP.keys);
    return;
  }
  if (action === 'create') {
    const role = values.role ?? 'agent';
    if (!(ROLE_NAMES as readonly string[]).includes(role)) fail(`--role must be one of ${ROLE_NAMES.join(', ')}`);
    if (role === 'agent' && values.agent === undefined) fail('keys create needs --agent ID for an agent key');
    const scopes = values.scopes
      ?.split(',')
      .map((name) => name.trim())
      .filter((name) => name.length > 0);
    const unknown = scopes?.filter((name) => !isPermission(name)) ?? [];
    if (unknown.length > 0) fail(`--scopes: unknown permission '${unknown.join("', '")}'; see GET /api/v1/auth/permissions`);
    const expiresAt = values.expires === undefined ? undefined : expiryOf(values.expires);
    const key = await withAuth(config, create, (auth) =>
      auth.createKey(
        { agent_id: values.agent, role: role as Role, scopes, expires_at: expiresAt, name: values.name },
        { actor: CLI_ACTOR, permissions: permissionsOf('admin', null) },
      ),
    );
    console.log(JSON.stringify(key, null, 2));
    return;
  }
  if (action === 'list') {
    const result = await withAuth(config, create, (auth) => auth.listKeys({ limit: 500, offset: 0 }, { includeRevoked: values.all }));
    console.log(JSON.stringify(result.items, null, 2));
    return;
  }
  if (action === 'revoke') {
    const id = rest[0];
    if (!id) fail('keys revoke needs a KEY_ID');
    const revoked = await withAuth(config, create, (auth) => auth.revokeKey(id, CLI_ACTOR));
    console.log(JSON.stringify({ id, revoked: true, public_keys_deleted: revoked.public_keys_deleted }));
    return;
  }
  fail(`unknown keys action '${action}'; see 'switchboard keys --help'`);
}

/** Everything on stdin, without its trailing line break (`--password-stdin`). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** The CLI manages users as an admin would. */
const CLI_MANAGER = { permissions: permissionsOf('admin', null) };

async function users(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      username: { type: 'string' },
      role: { type: 'string' },
      'display-name': { type: 'string' },
      'password-stdin': { type: 'boolean' },
      create: { type: 'boolean' },
    },
  });
  const [action, username, ...extra] = positionals;
  if (action === undefined) {
    console.log(HELP.users);
    return;
  }
  if (extra.length > 0) fail("see 'switchboard users --help'");
  const create = values.create ?? false;
  if (action === 'create') {
    if (values.username === undefined || values.role === undefined) fail('users create needs --username U and --role R');
    const role = values.role;
    if (role === 'agent' || !(ROLE_NAMES as readonly string[]).includes(role))
      fail('--role must be one of admin, operator, approver, viewer');
    const generated = values['password-stdin'] ? null : generatePassword();
    const password = generated ?? (await readStdin());
    const user = await withAuth(config, create, (_auth, service) =>
      service.create(
        { username: values.username!, role: role as Exclude<Role, 'agent'>, display_name: values['display-name'], password },
        CLI_MANAGER,
      ),
    ).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
    console.log(JSON.stringify(generated === null ? user : { ...user, password: generated }, null, 2));
    return;
  }
  if (action === 'list') {
    const result = await withAuth(config, create, (_auth, service) => service.list({ limit: 100_000, offset: 0 }));
    console.log(JSON.stringify(result.items, null, 2));
    return;
  }
  if ((action === 'disable' || action === 'enable') && username !== undefined) {
    const user = await withAuth(config, create, async (_auth, service) => {
      const { id } = await service.getByName(username);
      return service.update(id, { disabled: action === 'disable' }, CLI_MANAGER);
    }).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
    console.log(JSON.stringify(user));
    return;
  }
  fail(`unknown users action '${action}'; see 'switchboard users --help'`);
}

async function groups(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  const [action, group, agentId, ...extra] = positionals;
  const usage = () => fail("see 'switchboard groups --help'");
  if (action === undefined) {
    console.log(HELP.groups);
    return;
  }
  if (extra.length > 0) usage();
  const problem = (value: string | undefined, pattern: string, what: string) => {
    if (value !== undefined && !new RegExp(pattern).test(value)) fail(`'${value}' is not a valid ${what}`);
  };
  problem(group, GROUP_PATTERN, 'group name');
  problem(agentId, AGENT_ID_PATTERN, 'agent id');
  const database = await openForCommand(config, false);
  try {
    await migrateToLatest(database);
    const audit = createAuditService({ database, clock: systemClock, config, logger: createLogger(config), actor: CLI_AUDIT_ACTOR });
    const { service } = createAccessGroups({ database, clock: systemClock, audit });
    if (action === 'add' && group && agentId) {
      const { membership, created } = await service.grant(group, agentId, CLI_ACTOR);
      console.log(JSON.stringify({ ...membership, created }));
    } else if (action === 'remove' && group && agentId) {
      await service.revoke(group, agentId).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
      console.log(JSON.stringify({ group, agent_id: agentId, deleted: true }));
    } else if (action === 'list' && agentId === undefined) {
      const everything = { limit: 100_000, offset: 0 };
      const result = group === undefined ? await service.listGroups(everything) : await service.listMembers(group, everything);
      console.log(JSON.stringify(result.items, null, 2));
    } else {
      usage();
    }
  } finally {
    await database.close();
  }
}

async function audit(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals[0] !== 'verify' || positionals.length > 1) fail("see 'switchboard audit --help'");
  const database = await openForCommand(config, false);
  try {
    await migrateToLatest(database);
    const result = await createAuditService({ database, clock: systemClock, config, logger: createLogger(config) }).verify();
    console.log(JSON.stringify(result));
    if (!result.ok) process.exitCode = 1;
  } finally {
    await database.close();
  }
}

async function blobs(config: Config, args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals[0] !== 'migrate' || positionals.length > 1) fail("see 'switchboard blobs --help'");
  if (!config.databaseUrl) fail('blobs migrate moves files into PostgreSQL: set DATABASE_URL to the database of the cluster');
  if (!fs.existsSync(path.join(config.dataDir, 'blobs', 'sha256'))) {
    console.error(`switchboard: no blob files under ${path.join(config.dataDir, 'blobs')}; nothing to move`);
    console.log(JSON.stringify({ moved: 0, present: 0, corrupt: [] }));
    return;
  }
  const database = await openForCommand(config, false);
  try {
    await migrateToLatest(database);
    const result = await migrateFileBlobs({
      ...blobMigrationFor(database, config.dataDir)!,
      onFile: (key, outcome) => {
        if (outcome === 'corrupt') console.error(`switchboard: ${key}: its bytes do not hash to its name; left in place`);
      },
    });
    console.log(JSON.stringify(result));
  } finally {
    await database.close();
  }
}

async function main(argv: string[]): Promise<void> {
  const command = argv[0] && !argv[0].startsWith('-') ? argv[0] : 'serve';
  const args = command === argv[0] ? argv.slice(1) : argv;
  if (command === 'help' || (command === 'serve' && args.includes('--help') && argv[0] !== 'serve')) {
    console.log(HELP.main);
    return;
  }
  if (!(command in HELP) || command === 'main') fail(`unknown command '${command}'; see 'switchboard --help'`);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(HELP[command]);
    return;
  }
  if (command === 'mcp') {
    // A client of a running server: it needs no local configuration or database.
    const { values } = parseArgs({ args, options: { url: { type: 'string' }, key: { type: 'string' } } });
    const url = values.url ?? process.env.SWITCHBOARD_URL;
    const key = values.key ?? process.env.SWITCHBOARD_API_KEY;
    if (!url || !key) fail('mcp needs --url URL and --key KEY');
    return serveStdio(url, key);
  }
  let config: Config;
  try {
    if (command === 'serve') {
      const { values } = parseArgs({
        args,
        options: { host: { type: 'string' }, port: { type: 'string' }, 'data-dir': { type: 'string' } },
      });
      config = loadConfig({
        ...process.env,
        ...(values.host !== undefined && { SWITCHBOARD_HOST: values.host }),
        ...(values.port !== undefined && { SWITCHBOARD_PORT: values.port }),
        ...(values['data-dir'] !== undefined && { SWITCHBOARD_DATA_DIR: values['data-dir'] }),
      });
    } else {
      config = loadConfig();
    }
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  switch (command) {
    case 'serve':
      return serve(config);
    case 'migrate': {
      const database = await openForCommand(config, true);
      try {
        const applied = await migrateToLatest(database);
        createLogger(config).info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
      } finally {
        await database.close();
      }
      return;
    }
    case 'keys':
      return keys(config, args);
    case 'users':
      return users(config, args);
    case 'groups':
      return groups(config, args);
    case 'audit':
      return audit(config, args);
    case 'blobs':
      return blobs(config, args);
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof Error ? `switchboard: ${err.message}` : err);
  process.exit(1);
});
