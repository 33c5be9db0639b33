/*
 * The commands that work directly on the configured database, without a server: migrate, keys,
 * users, groups, audit and blobs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { blobMigrationFor, migrateFileBlobs } from '../artifacts/index.js';
import { createAuditService } from '../audit/index.js';
import { isPermission, permissionsOf, ROLE_NAMES, type Role } from '../auth/permissions.js';
import { createAuthDomain, type AuthService, type UsersService } from '../auth/index.js';
import { generatePassword } from '../auth/passwords.js';
import { createAccessGroups } from '../auth/groups/index.js';
import type { Config } from '../config.js';
import { databaseOptions, describeDatabase, openDatabase, sqliteFile, type DatabaseHandle } from '../db/database.js';
import { hasMigrated, migrateToLatest } from '../db/migrate.js';
import { openNotifier } from '../db/notifiers.js';
import { GROUP_PATTERN } from '../discovery/schemas.js';
import { createEventLog } from '../events/index.js';
import { AGENT_ID_PATTERN } from '../http/schemas.js';
import { systemClock } from '../kernel/clock.js';
import { createLogger } from '../logger.js';
import { fail, HELP } from './help.js';

/** The actor of what the CLI does (key events). */
const CLI_ACTOR = 'cli';
/** The CLI in the audit log. */
const CLI_AUDIT_ACTOR = { kind: 'system', id: CLI_ACTOR, key_id: null };
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

export async function keys(config: Config, args: string[]): Promise<void> {
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

export async function users(config: Config, args: string[]): Promise<void> {
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

export async function groups(config: Config, args: string[]): Promise<void> {
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

export async function audit(config: Config, args: string[]): Promise<void> {
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

export async function blobs(config: Config, args: string[]): Promise<void> {
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

export async function migrate(config: Config): Promise<void> {
  const database = await openForCommand(config, true);
  try {
    const applied = await migrateToLatest(database);
    createLogger(config).info({ applied }, applied.length ? 'migrations applied' : 'database is up to date');
  } finally {
    await database.close();
  }
}
