import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

/*
 * The deployment files of deploy/, checked with what a machine without a Docker daemon runs:
 * the Dockerfile's instructions read here, the Compose file parsed as YAML and checked against
 * what docs/cluster.md says each node needs, and the systemd unit by systemd-analyze.
 */

const run = promisify(execFile);
const config = fs.readFileSync('src/config.ts', 'utf8');
/** The flags of the CLI's first line (src/cli.ts), which every way of starting the server passes. */
const NODE_FLAGS = fs
  .readFileSync('src/cli.ts', 'utf8')
  .split('\n')[0]!
  .split(' ')
  .filter((arg) => arg.startsWith('--'));

interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function dockerfile(): Instruction[] {
  const lines = fs.readFileSync('deploy/Dockerfile', 'utf8').split('\n');
  const instructions: Instruction[] = [];
  let current = '';
  for (const line of lines) {
    if (/^\s*#/.test(line)) continue;
    current += line.replace(/\\$/, ' ');
    if (line.endsWith('\\')) continue;
    const match = /^\s*([A-Za-z]+)\s+(.*)$/.exec(current);
    if (match) instructions.push({ keyword: match[1]!.toUpperCase(), args: match[2]!.trim() });
    current = '';
  }
  return instructions;
}

describe('deploy/Dockerfile (not built here: no Docker daemon)', () => {
  const instructions = dockerfile();
  const stages = instructions.flatMap((instruction, i) => (instruction.keyword === 'FROM' ? [i] : []));
  const last = instructions.slice(stages.at(-1));

  it('builds in one stage on Node 24 and runs from another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const names = stages.map((i) => instructions[i]!.args.split(/\s+AS\s+/i));
    for (const [image] of names) expect(image).toMatch(/^node:24[.-]/);
    const built = new Set(names.map(([, name]) => name));
    const copiedFrom = last.flatMap(({ keyword, args }) => (keyword === 'COPY' ? [/--from=(\S+)/.exec(args)?.[1]] : []));
    expect(copiedFrom.filter((from) => from !== undefined).length).toBeGreaterThan(0);
    for (const from of copiedFrom) if (from !== undefined) expect(built).toContain(from);
  });

  it('runs as a user that is not root, checks /readyz and starts the CLI with its node flags', () => {
    const user = last.filter(({ keyword }) => keyword === 'USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    const healthcheck = last.find(({ keyword }) => keyword === 'HEALTHCHECK')?.args;
    expect(healthcheck).toMatch(/\/readyz/);
    expect(healthcheck).toMatch(/CMD \[/);
    const entrypoint = JSON.parse(last.find(({ keyword }) => keyword === 'ENTRYPOINT')!.args) as string[];
    expect(entrypoint).toEqual(['node', ...NODE_FLAGS, 'dist/cli.js']);
    expect(JSON.parse(last.find(({ keyword }) => keyword === 'CMD')!.args)).toEqual(['serve']);
  });

  it('copies files that exist and sets only settings the server knows', () => {
    for (const { keyword, args } of instructions) {
      if (keyword !== 'COPY' || args.includes('--from=')) continue;
      for (const source of args.split(/\s+/).slice(0, -1)) if (source !== '.') expect(fs.existsSync(source), source).toBe(true);
    }
    for (const { args } of instructions.filter(({ keyword }) => keyword === 'ENV')) {
      for (const [, name] of args.matchAll(/(SWITCHBOARD_[A-Z_]+)=/g)) expect(config).toContain(`'${name}'`);
    }
  });
});

describe('deploy/docker-compose.yml (not run here)', () => {
  const compose = parse(fs.readFileSync('deploy/docker-compose.yml', 'utf8'), { merge: true }) as {
    services: Record<
      string,
      { image?: string; build?: { context: string; dockerfile: string }; environment?: Record<string, string>; volumes?: string[] }
    >;
  };
  const nodes = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);

  it('runs two Switchboard nodes on one PostgreSQL, as docs/cluster.md says each node needs', () => {
    expect(compose.services.postgres?.image).toMatch(/^postgres:/);
    expect(nodes).toHaveLength(2);
    const environments = nodes.map(([, service]) => service.environment!);
    for (const environment of environments) {
      expect(new URL(environment.DATABASE_URL!).hostname).toBe('postgres');
      expect(environment.SWITCHBOARD_ADMIN_KEY).toBeTruthy();
      expect(environment.SWITCHBOARD_PUBLIC_URL).toBeTruthy();
      expect(environment.SWITCHBOARD_HOST).toBe('0.0.0.0');
      for (const name of Object.keys(environment).filter((key) => key.startsWith('SWITCHBOARD_'))) expect(config).toContain(`'${name}'`);
    }
    // The same database and admin key on every node; a data directory each.
    expect(new Set(environments.map((environment) => environment.DATABASE_URL)).size).toBe(1);
    expect(new Set(environments.map((environment) => environment.SWITCHBOARD_ADMIN_KEY)).size).toBe(1);
    const dataVolumes = nodes.map(([, service]) => service.volumes!.find((volume) => volume.endsWith(':/var/lib/switchboard')));
    expect(new Set(dataVolumes).size).toBe(2);
    for (const [, service] of nodes) {
      expect(fs.existsSync(path.join('deploy', service.build!.context, service.build!.dockerfile))).toBe(true);
    }
  });
});

describe('deploy/switchboard.service', () => {
  const unit = fs.readFileSync('deploy/switchboard.service', 'utf8');

  it('passes systemd-analyze verify', async (context) => {
    const found = await run('systemd-analyze', ['--version']).then(
      () => true,
      () => false,
    );
    if (!found) {
      if (process.env.CI) throw new Error('CI is set but systemd-analyze is not installed');
      context.skip();
    }
    const { stderr } = await run('systemd-analyze', ['verify', path.resolve('deploy/switchboard.service')]);
    expect(stderr).toBe('');
  });

  it('starts the CLI with its node flags, unprivileged and confined', () => {
    expect(unit).toMatch(new RegExp(`^ExecStart=\\S*node ${NODE_FLAGS.join(' ')} \\S*dist/cli\\.js serve$`, 'm'));
    for (const setting of ['DynamicUser=yes', 'NoNewPrivileges=yes', 'ProtectSystem=strict', 'ProtectHome=yes', 'PrivateTmp=yes']) {
      expect(unit).toMatch(new RegExp(`^${setting}$`, 'm'));
    }
    // V8 compiles to executable memory: the JIT needs writable, executable pages.
    expect(unit).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
  });
});
