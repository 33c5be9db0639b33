import { sql } from 'kysely';
import { expect, it } from 'vitest';
import { EXACT_TOTAL_BOUND } from '../../src/kernel/pagination.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/** A list longer than the server counts exactly: the pager says its total is an estimate. */
describeEachDialect('the console: a list past the exact count', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it(`shows "of about" for a list of more than ${EXACT_TOTAL_BOUND} runs, and the exact total below it`, async () => {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: 'many-runs',
      steps: [{ id: 'w', type: 'wait', seconds: 3600 }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    const page = await browser.open();
    await signIn(page, server, '/console/runs');
    const pager = page.getByRole('navigation', { name: 'Pages' });
    await expect.poll(() => pager.textContent(), { timeout: WAIT_MS }).toContain('of 1 runs');

    // Copies of that run, written straight into the database: through the API they would take minutes.
    const db = server.app.platform.database.db;
    const [template] = (await sql<Record<string, unknown>>`select * from runs where id = ${run.body.data.id}`.execute(db)).rows;
    const columns = Object.keys(template!);
    const values = columns.map((column) => (column === 'id' ? sql`'run_copy_' || n.i` : sql.ref(`t.${column}`)));
    await sql`
      insert into runs (${sql.join(columns.map((column) => sql.ref(column)))})
      select ${sql.join(values)} from runs as t,
        (with recursive s(i) as (select 1 union all select i + 1 from s where i < ${EXACT_TOTAL_BOUND + 100}) select i from s) as n
      where t.id = ${run.body.data.id}`.execute(db);
    await page.reload();
    await expect.poll(() => pager.textContent(), { timeout: WAIT_MS }).toMatch(/of about [\d,]+ runs/);
  });
});
