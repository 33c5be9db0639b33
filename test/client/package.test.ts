import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATIONS } from '../../clients/typescript/src/operations.js';
import { CLIENT_SHAPES_FILE, renderClientShapes } from '../../scripts/generate-client-types.js';
import type { Dialect } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/*
 * The TypeScript client as a package of its own (clients/typescript, @switchboard/client): its
 * generated types are what the server's schemas make (npm run generate:client), and what
 * `npm pack` makes of it installs offline into a project that has nothing of the server, runs
 * there under plain Node against a real server, and type-checks a program that uses it.
 */

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, '../..');
const PACKAGE_DIR = path.join(root, 'clients/typescript');
const npm = (args: string[], cwd: string) =>
  run(process.platform === 'win32' ? 'npm.cmd' : 'npm', args, { cwd, env: { ...process.env, npm_config_update_notifier: 'false' } });

/** The client's dependencies and theirs, by name, read from the installed tree. */
function dependencyClosure(names: string[]): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const manifest = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const dependency of Object.keys(manifest.dependencies ?? {})) visit(dependency);
  };
  names.forEach(visit);
  return [...seen];
}

let work: string;
let project: string;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-client-package-'));
  // npm pack runs the package's prepack (its own build).
  await npm(['pack', '--silent', '--pack-destination', work], PACKAGE_DIR);
  const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_DIR, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  // Offline, the registry is out of reach: the client's few dependencies come packed from the
  // repository's own installed tree, so npm resolves every range without a network.
  const deps = path.join(work, 'deps');
  fs.mkdirSync(deps);
  for (const name of dependencyClosure(Object.keys(manifest.dependencies ?? {})))
    await npm(['pack', '--silent', '--ignore-scripts', '--pack-destination', deps, path.join(root, 'node_modules', name)], work);

  project = path.join(work, 'app');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const tarball = fs.readdirSync(work).find((name) => name.endsWith('.tgz'))!;
  expect(tarball).toMatch(/^switchboard-client-.*\.tgz$/);
  const tarballs = [path.join(work, tarball), ...fs.readdirSync(deps).map((name) => path.join(deps, name))];
  await npm(['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], project);
}, 240_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('the client package', () => {
  it('its generated types are what the server schemas make (npm run generate:client)', async () => {
    const checkedIn = fs.readFileSync(path.join(root, CLIENT_SHAPES_FILE), 'utf8');
    expect((await renderClientShapes()) === checkedIn, `${CLIENT_SHAPES_FILE} is stale: run npm run generate:client`).toBe(true);
  }, 180_000);

  it('packs its build and nothing of the server, and imports nothing from outside its folder', () => {
    const installed = path.join(project, 'node_modules/@switchboard/client');
    const files = fs.readdirSync(path.join(installed, 'dist'));
    expect(files).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'browser.js', 'browser.d.ts', 'operations.js']));
    expect(fs.existsSync(path.join(installed, 'src'))).toBe(false);
    for (const name of files) {
      const text = fs.readFileSync(path.join(installed, 'dist', name), 'utf8');
      for (const [, specifier] of text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g))
        expect(specifier!.startsWith('../') || specifier!.startsWith('#'), `${name} imports ${specifier}`).toBe(false);
    }
  });

  it('gives browsers (the `browser` condition) the entry without Node built-ins or the agent worker', async () => {
    const probe = "const m = await import('@switchboard/client'); console.log(typeof m.Switchboard, typeof m.createAgent);";
    const browser = await run(process.execPath, ['--conditions=browser', '--input-type=module', '-e', probe], { cwd: project });
    expect(browser.stdout.trim()).toBe('function undefined');
    const node = await run(process.execPath, ['--input-type=module', '-e', probe], { cwd: project });
    expect(node.stdout.trim()).toBe('function function');
  });

  it('type-checks a program against the packed types, and rejects a wrong field', () => {
    const file = path.join(project, 'program.ts');
    fs.writeFileSync(
      file,
      [
        "import { createAgent, Switchboard, SwitchboardError, type Body, type Item, type Result } from '@switchboard/client';",
        "const client = new Switchboard({ url: 'http://127.0.0.1:1', apiKey: 'sk_unused' });",
        "const body: Body<'messaging.send'> = { destination: 'a', event_name: 'e', payload: { n: 1 } };",
        'export async function main(): Promise<string> {',
        "  const sent: Result<'messaging.send'> = await client.messaging.send({ body });",
        "  for await (const task of client.tasks.list.all({ query: { status: 'todo' } })) void (task satisfies Item<'tasks.list'>).title;",
        "  const agent = createAgent({ client, agentId: 'a', capabilities: ['echo'], concurrency: 2 });",
        '  void agent;',
        "  void new SwitchboardError(404, 'not_found', 'gone', undefined).status;",
        "  await client.messaging.send({ body: { destination: 'a', event_nam: 'e' } });",
        "  await client.tasks.create({ body: { title: 't', priority: 'critical' } });",
        '  return sent.message_id;',
        '}',
      ].join('\n'),
    );
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noEmit: true,
      // The packed declarations are checked too, not skipped.
      skipLibCheck: false,
      types: ['node'],
      typeRoots: [path.join(root, 'node_modules/@types')],
    };
    const program = ts.createProgram([file], options);
    const diagnostics = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => !d.file || d.file.fileName === file || d.file.fileName.includes('/@switchboard/client/'))
      .map((d) => ({
        file: d.file && path.relative(project, d.file.fileName),
        line: d.file && d.file.getLineAndCharacterOfPosition(d.start!).line + 1,
        message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
      }));
    expect(
      diagnostics.map((d) => [d.file, d.line]),
      JSON.stringify(diagnostics, null, 2),
    ).toEqual([
      ['program.ts', 10],
      ['program.ts', 11],
    ]);
    expect(diagnostics[0]!.message).toContain("'event_nam' does not exist");
    expect(diagnostics[1]!.message).toContain('"critical"');
  }, 120_000);
});

describeEachDialect('the client package, installed in a project of its own', (dialect: Dialect) => {
  const server = useServer(dialect);

  it('runs under plain Node against a real server', async () => {
    const program = path.join(project, `program-${dialect}.mjs`);
    fs.writeFileSync(
      program,
      [
        "import { OPERATIONS, Switchboard, SwitchboardError, topicMatches } from '@switchboard/client';",
        'const client = new Switchboard({ url: process.env.SWITCHBOARD_URL, apiKey: process.env.SWITCHBOARD_API_KEY });',
        'const me = await client.auth.whoami();',
        "for (const id of ['pkg-a', 'pkg-b']) await client.discovery.registerCapability({ body: { agent_id: id, capability: 'pkg.echo' } });",
        'const found = [];',
        "for await (const agent of client.discovery.findAgents.all({ query: { capability: 'pkg.echo', limit: 1 } })) found.push(agent.agent_id);",
        "const sent = await client.messaging.send({ body: { destination: 'pkg-a', event_name: 'hello', payload: { n: 1 } } });",
        "const { messages } = await client.messaging.receive({ query: { agent_id: 'pkg-a', timeout: 5 } });",
        'let missing;',
        "try { await client.tasks.get({ path: { id: 'tsk_missing' } }); } catch (error) { missing = error instanceof SwitchboardError && [error.status, error.code]; }",
        'console.log(JSON.stringify({',
        '  role: me.role, found: found.sort(), sent: sent.message_id === messages[0]?.message_id, payload: messages[0]?.payload, missing,',
        "  domains: Object.keys(OPERATIONS).length, matches: topicMatches('run.>', 'run.completed'),",
        '}));',
      ].join('\n'),
    );
    const { stdout } = await run(process.execPath, [program], {
      cwd: project,
      env: { PATH: process.env.PATH, SWITCHBOARD_URL: server.url, SWITCHBOARD_API_KEY: server.adminKey },
    });
    expect(JSON.parse(stdout)).toEqual({
      role: 'admin',
      found: ['pkg-a', 'pkg-b'],
      sent: true,
      payload: { n: 1 },
      missing: [404, 'not_found'],
      // The packed table is the sources' table: every domain, not a count to update per new one.
      domains: Object.keys(OPERATIONS).length,
      matches: true,
    });
  }, 60_000);
});
