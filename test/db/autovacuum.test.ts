import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { vacuumWhereAutovacuumWont } from '../../src/db/autovacuum.js';
import { HOT_TABLES } from '../../src/db/migrations/0043-autovacuum.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

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

  it('vacuums and analyzes a hot table autovacuum skips once it changed enough, and only then (the leader, after each retention pass)', async () => {
    await sql`alter table events set (autovacuum_enabled = false)`.execute(db());
    try {
      await sql`
        insert into events (type, subject, actor, data, reason, readers, created_at)
        select 'task.created', 'tsk_' || i, 'admin', '{}', null, null, ${Date.now()} from generate_series(1, 3000) as n(i)`.execute(db());
      const stats = async () =>
        (
          await sql<{ n_ins_since_vacuum: number; last_vacuum: Date | null; last_analyze: Date | null }>`
            select n_ins_since_vacuum, last_vacuum, last_analyze from pg_stat_user_tables where relname = 'events'`.execute(db())
        ).rows[0]!;
      // The statistics reach pg_stat_user_tables a second or so after the commit (longer on a busy machine).
      await waitFor(async () => Number((await stats()).n_ins_since_vacuum) >= 3000 || undefined, 20_000, 100);
      expect((await stats()).last_vacuum).toBeNull();
      expect(await vacuumWhereAutovacuumWont(server.app.platform.database)).toContain('events');
      await waitFor(async () => (await stats()).last_vacuum ?? undefined, 20_000, 100);
      expect((await stats()).last_analyze).not.toBeNull();
      // Nothing changed since: nothing to do.
      expect(await vacuumWhereAutovacuumWont(server.app.platform.database)).not.toContain('events');
    } finally {
      await sql`alter table events reset (autovacuum_enabled)`.execute(db());
    }
  });
});
