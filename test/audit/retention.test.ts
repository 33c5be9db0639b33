import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { FakeClock } from '../helpers/clock.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
/** Needs `npm run build` (as test/cli.test.ts). */
const CLI = path.resolve('dist/cli.js');
const DAY_MS = 86_400_000;

describeEachDialect('audit log retention and `switchboard audit verify`', (dialect) => {
  const database = useTestDatabase(dialect);

  async function verify(server: TestServer) {
    const res = await server.api.get('/api/v1/audit/verify');
    expect(res.status).toBe(200);
    return res.body.data as { ok: boolean; checked: number; first_broken?: string; anchor: { seq: number; hash: string } | null };
  }

  async function cli(): Promise<{ code: number; result: { ok: boolean; checked: number; first_broken?: string } }> {
    const env = { PATH: process.env.PATH, SWITCHBOARD_DATA_DIR: database().dataDir, SWITCHBOARD_LOG_LEVEL: 'silent', ...database().env };
    try {
      const { stdout } = await run(process.execPath, [CLI, 'audit', 'verify'], { env });
      return { code: 0, result: JSON.parse(stdout) };
    } catch (err) {
      const failed = err as { code: number; stdout: string };
      return { code: failed.code, result: JSON.parse(failed.stdout) };
    }
  }

  it('trims entries past the retention from the oldest end, and the chain still verifies from its anchor', async () => {
    const first = await startServer(dialect, { database: database() });
    try {
      for (const name of ['old-1', 'old-2', 'old-3']) expect((await first.api.post('/core/api/v1/projects', { name })).status).toBe(201);
      expect(await verify(first)).toMatchObject({ ok: true, checked: 3, anchor: null });
    } finally {
      await first.close();
    }
    // Two days on, with a retention of one: the sweep at start trims what the first node wrote.
    const later = await startServer(dialect, {
      database: database(),
      clock: new FakeClock(Date.now() + 2 * DAY_MS),
      env: { SWITCHBOARD_AUDIT_RETENTION_DAYS: '1' },
    });
    try {
      const trimmed = await waitFor(async () => {
        const result = await verify(later);
        return result.anchor === null ? null : { ...result, anchor: result.anchor };
      });
      expect(trimmed).toMatchObject({ ok: true, checked: 0 });
      expect((await later.api.get('/api/v1/audit')).body.meta.total).toBe(0);
      expect((await later.api.post('/core/api/v1/projects', { name: 'kept' })).status).toBe(201);
      const [kept] = (await later.api.get('/api/v1/audit')).body.data;
      expect(kept.prev_hash).toBe(trimmed.anchor.hash);
      expect(await verify(later)).toMatchObject({ ok: true, checked: 1 });
    } finally {
      await later.close();
    }
  });

  it('`switchboard audit verify` checks the chain offline: exit 0 when it holds, 1 naming the entry when it does not', async () => {
    expect(await cli()).toMatchObject({ code: 0, result: { ok: true, checked: 1 } });
    // Deleting the oldest entry without moving the anchor is tampering, not trimming.
    const handle = openDatabase(database().options(1));
    try {
      const [oldest] = await handle.db.selectFrom('audit_log').select('id').orderBy('seq').limit(1).execute();
      await handle.db
        .updateTable('audit_log')
        .set({ prev_hash: '1'.repeat(64) })
        .where('id', '=', oldest!.id)
        .execute();
      expect(await cli()).toMatchObject({ code: 1, result: { ok: false, checked: 0, first_broken: oldest!.id } });
    } finally {
      await handle.close();
    }
  });
});
