import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { HOT_TABLES } from '../../src/db/migrations/0043-autovacuum.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('autovacuum of the hot tables', (dialect) => {
  const server = useServer(dialect);
  const db = () => server.app.platform.database.db;
  const ready = async () => {
    const res = await server.api.get('/readyz', { key: null });
    expect(res.status).toBe(200);
    return res.body as { checks: Record<string, string>; autovacuum_off?: string[] };
  };

  if (dialect !== 'postgres') {
    it('is no check on SQLite', async () => {
      const body = await ready();
      expect(body.checks.autovacuum).toBeUndefined();
      expect(body.autovacuum_off).toBeUndefined();
    });
    return;
  }

  it('sets each hot table to vacuum and analyze at 2% of its rows', async () => {
    const { rows } = await sql<{ relname: string; reloptions: string[] }>`
      select relname, reloptions from pg_class where relname = any(${[...HOT_TABLES]}::text[]) and relkind = 'r'`.execute(db());
    expect(rows.map((row) => row.relname).sort()).toEqual([...HOT_TABLES].sort());
    for (const row of rows)
      expect(row.reloptions, row.relname).toEqual(
        expect.arrayContaining(['autovacuum_vacuum_scale_factor=0.02', 'autovacuum_analyze_scale_factor=0.02']),
      );
  });

  it('/readyz says when autovacuum is off, server-wide or for a hot table, and stays ready', async () => {
    const { rows } = await sql<{ autovacuum: string }>`show autovacuum`.execute(db());
    if (rows[0]!.autovacuum === 'off') {
      // This server runs without autovacuum: every hot table is named.
      expect(await ready()).toMatchObject({ checks: { autovacuum: 'off' }, autovacuum_off: [...HOT_TABLES].sort() });
      return;
    }
    expect((await ready()).checks.autovacuum).toBe('on');
    await sql`alter table messages set (autovacuum_enabled = false)`.execute(db());
    try {
      expect(await ready()).toMatchObject({ status: 'ready', checks: { autovacuum: 'off' }, autovacuum_off: ['messages'] });
    } finally {
      await sql`alter table messages reset (autovacuum_enabled)`.execute(db());
    }
    expect((await ready()).autovacuum_off).toBeUndefined();
  });
});
