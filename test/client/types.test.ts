import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { Switchboard, type CallInput, type Item, type Result } from '../../src/client/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/*
 * Compile-time checks. This file is in tsconfig.json's `include`, so `npm run typecheck` (part of
 * `npm test`) fails when a @ts-expect-error below stops being an error, i.e. when the types
 * stop rejecting the wrong field. The last test runs the compiler itself on a snippet, so the
 * vitest run alone shows it too.
 */
describe('SDK types', () => {
  it('reject a wrong body field, path parameter, query parameter and result field', () => {
    const client = new Switchboard({ url: 'http://127.0.0.1:1', apiKey: 'sk_unused' });
    // Never called: only compiled.
    const calls = async () => {
      // @ts-expect-error event_nam is not a field of a message
      await client.messaging.send({ body: { destination: 'a', event_nam: 'x' } });
      // @ts-expect-error send needs its body
      await client.messaging.send();
      // @ts-expect-error tasks.get takes the path parameter id
      await client.tasks.get({ path: { task_id: 't' } });
      // @ts-expect-error the path parameter is required
      await client.coordination.getRun();
      // @ts-expect-error heartbeat load is a number
      await client.discovery.heartbeat({ body: { agent_id: 'a', load: 'high' } });
      // @ts-expect-error priority is none, low, medium, high or urgent
      await client.tasks.create({ body: { title: 't', priority: 'critical' } });
      // @ts-expect-error stats is not a query parameter of tasks.list
      await client.tasks.list({ query: { stats: 'todo' } });
      const task = await client.tasks.get({ path: { id: 't' } });
      // @ts-expect-error a task has no field titel
      void task.titel;
      // @ts-expect-error tasks.get is no paginated list
      void client.tasks.get.all;
      // @ts-expect-error listPublicKeys answers one array, not pages
      void client.auth.listPublicKeys.all;
      // Right ones compile.
      await client.messaging.send({ body: { destination: 'a', event_name: 'x', payload: { any: 'json' } } });
      await client.tasks.update({ path: { id: task.id }, body: { priority: 'urgent', assigned_to: null } });
      await client.routines.trigger({ path: { id: 'rtn_1' } });
      for await (const item of client.tasks.list.all({ query: { status: 'todo' } })) void item.title;
    };
    expectTypeOf(calls).toBeFunction();
    expectTypeOf<CallInput<'tasks.get'>['path']>().toEqualTypeOf<Record<'id', string | number>>();
    expectTypeOf<Result<'artifacts.download'>>().toEqualTypeOf<Response>();
    expectTypeOf<Item<'tasks.list'>>().toEqualTypeOf<Result<'tasks.get'>>();
    expectTypeOf<Result<'tasks.get'>['priority']>().toEqualTypeOf<'none' | 'low' | 'medium' | 'high' | 'urgent'>();
  });

  it('the compiler rejects a wrong field in code that uses the SDK', () => {
    const file = join(root, 'test/client/__types_probe__.ts');
    const source = [
      "import { Switchboard } from '../../src/client/index.js';",
      "const client = new Switchboard({ url: 'http://127.0.0.1:1', apiKey: 'sk_unused' });",
      "void client.messaging.send({ body: { destination: 'a', event_name: 'x' } });",
      "void client.messaging.send({ body: { destination: 'a', event_nam: 'x' } });",
      "void client.tasks.create({ body: { title: 't', priority: 'critical' } });",
    ].join('\n');
    const config = ts.getParsedCommandLineOfConfigFile(
      join(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
    )!;
    const host = ts.createCompilerHost(config.options);
    const getSourceFile = host.getSourceFile.bind(host);
    host.getSourceFile = (name, version, ...rest) =>
      resolve(name) === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, ...rest);
    const fileExists = host.fileExists.bind(host);
    host.fileExists = (name) => resolve(name) === file || fileExists(name);
    const program = ts.createProgram([file], { ...config.options, noEmit: true }, host);
    const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(file)).map((d) => ({
      line: d.file!.getLineAndCharacterOfPosition(d.start!).line + 1,
      message: ts.flattenDiagnosticMessageText(d.messageText, '\n'),
    }));
    expect(diagnostics.map((d) => d.line)).toEqual([4, 5]);
    expect(diagnostics[0]!.message).toContain("'event_nam' does not exist");
    expect(diagnostics[1]!.message).toContain('"critical"');
  }, 120_000);
});
