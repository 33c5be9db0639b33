import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { migrations } from '../../src/db/migrations/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');

describeEachDialect('migrations', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database.drop();
  });

  const open = () => openDatabase(database.options(2));

  it('apply every migration once, from two processes at the same time, and nothing on a second run', async () => {
    // Two nodes starting together: the migration lock lets exactly one apply each migration.
    const env = {
      PATH: process.env.PATH,
      SWITCHBOARD_LOG_LEVEL: 'info',
      SWITCHBOARD_DATA_DIR: database.dataDir,
      ...database.env,
    };
    const outputs = await Promise.all([1, 2].map(() => run(process.execPath, [CLI, 'migrate'], { env })));
    const applied = outputs.flatMap(({ stdout }) => (JSON.parse(stdout.trim().split('\n').pop()!) as { applied: string[] }).applied);
    expect(applied.sort()).toEqual(Object.keys(migrations).sort());
    const handle = open();
    try {
      expect(await migrateToLatest(handle)).toEqual([]);
      const names = (await handle.db.introspection.getTables()).map((t) => t.name);
      for (const table of ['api_keys', 'agent_public_keys', 'signature_nonces', 'settings']) expect(names).toContain(table);
    } finally {
      await handle.close();
    }
  });

  it('keep data across reopening', async () => {
    const first = open();
    await migrateToLatest(first);
    await first.db.insertInto('settings').values({ name: 'probe', value: '42', updated_at: 1 }).execute();
    await first.close();
    const second = open();
    try {
      expect(await migrateToLatest(second)).toEqual([]);
      const row = await second.db.selectFrom('settings').select('value').where('name', '=', 'probe').executeTakeFirst();
      expect(row?.value).toBe('42');
    } finally {
      await second.close();
    }
  });

  it('turn the text outputs of routine executions into JSON strings (0040), leaving none unread', async () => {
    const handle = open();
    try {
      await migrateToLatest(handle);
      const row = { routine_id: 'rtn_m', status: 'success', trigger: 'manual', payload: '{}', deadline_at: 1, created_at: 1 } as const;
      await handle.db
        .insertInto('routine_executions')
        .values([
          { ...row, id: 'exe_text', output: 'all done' },
          { ...row, id: 'exe_json_text', output: '{"summary":"ok"}' },
          { ...row, id: 'exe_none', output: null },
        ])
        .execute();
      // As a database of before the migration kept them: text. Running it again converts them.
      await migrations['0040-routine-output-json']!.up(handle.db as never, handle.caps);
      const rows = await handle.db
        .selectFrom('routine_executions')
        .select(['id', 'output'])
        .where('routine_id', '=', 'rtn_m')
        .orderBy('id')
        .execute();
      expect(rows.map((r) => [r.id, r.output === null ? null : JSON.parse(r.output)])).toEqual([
        ['exe_json_text', '{"summary":"ok"}'],
        ['exe_none', null],
        ['exe_text', 'all done'],
      ]);
    } finally {
      await handle.close();
    }
  });
});
