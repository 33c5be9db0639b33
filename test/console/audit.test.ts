import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { createPerson, seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const C = '/api/v1/coordination';

/** The console's audit log view: entries, filters in the URL, resource links, the chain's check, and who may see it. */
describeEachDialect('the console: audit log', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let plans = 0;

  /** Starts a run waiting at a human_approval step `gate` anyone with approvals:decide may decide; its id. */
  async function waitingRun(): Promise<string> {
    const plan = await server.api.post(`${C}/plans`, {
      alias: `console-audit-${dialect}-${++plans}`,
      steps: [{ id: 'gate', type: 'human_approval', prompt: `Ship ${plans}?` }],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    return run.body.data.id;
  }

  it('shows a step a person approved with the person as actor; filters narrow it, live in the URL and survive a reload; the resource opens its run', async () => {
    const approver = await createPerson(server, `audit-approver-${dialect}`, 'approver');
    const runId = await waitingRun();
    const page = await browser.open();
    await signIn(page, server, '/console/approvals', approver);
    const card = page.locator(`li.approval[data-run="${runId}"]`);
    await card.getByRole('button', { name: 'Approve' }).click();
    await card.waitFor({ state: 'detached', timeout: WAIT_MS });

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor({ timeout: WAIT_MS });
    const approved = page.locator('tr[data-action="step.approve"]', { hasText: `${runId}/gate` });
    await approved.waitFor({ timeout: WAIT_MS });
    expect(await approved.locator('td').allTextContents()).toEqual([
      `user:${approver.username} user`,
      'step.approve',
      `step ${runId}/gate`,
      'allowed',
    ]);
    // Unfiltered, the list holds what others did too (the admin key that made the plan and run).
    const started = page.locator('tr[data-action="run.start"]', { hasText: runId }).locator('td').first();
    await started.waitFor();
    expect(await started.textContent()).toBe('admin admin');

    const filters = page.getByRole('search', { name: 'Filter audit entries' });
    await filters.getByLabel('Actor').fill(`user:${approver.username}`);
    await filters.getByLabel('Outcome').selectOption('allowed');
    await filters.getByLabel('Time').selectOption('1h');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('actor') === `user:${approver.username}`, { timeout: WAIT_MS });
    // The person's sign-in and their approval, newest first.
    const actions = () => page.locator('tr[data-entry]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-action')));
    await expect.poll(actions, { timeout: WAIT_MS }).toEqual(['step.approve', 'session.create']);

    await filters.getByLabel('Action').fill('step.approve');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await expect.poll(actions, { timeout: WAIT_MS }).toEqual(['step.approve']);
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({
      actor: `user:${approver.username}`,
      action: 'step.approve',
      outcome: 'allowed',
      within: '1h',
    });

    await page.reload();
    await page.locator('tr[data-entry]').first().waitFor({ timeout: WAIT_MS });
    expect(await actions()).toEqual(['step.approve']);
    expect(await filters.getByLabel('Actor').inputValue()).toBe(`user:${approver.username}`);
    expect(await filters.getByLabel('Action').inputValue()).toBe('step.approve');
    expect(await filters.getByLabel('Outcome').inputValue()).toBe('allowed');
    expect(await filters.getByLabel('Time').inputValue()).toBe('1h');

    // A window that ended before any of this matches nothing.
    await filters.getByLabel('Time').selectOption('between');
    await filters.getByLabel('Until').fill('2020-01-01T00:00');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No audit entry matches these filters.').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('to')).toMatch(/^2020-01-01T/);
    await page.goBack();

    await page
      .locator('tr[data-action="step.approve"]')
      .getByRole('link', { name: `${runId}/gate` })
      .click();
    await page.getByRole('heading', { name: runId }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${runId}`);
  });

  it('pages the entries on the server, and verifies the chain: intact, then broken where a row was edited in the database', async () => {
    const names = [];
    for (let i = 0; i < 53; i++) {
      const res = await server.api.post('/core/api/v1/projects', { name: `audit-paging-${dialect}-${i}` });
      expect(res.status, res.text).toBe(201);
      names.push(res.body.data.id as string);
    }
    const page = await browser.open();
    await signIn(page, server, '/console/audit?action=project.create&actor=admin');
    await page.getByText('1–50 of 53 entries').waitFor({ timeout: WAIT_MS });
    // Newest first; a project's entry links to its board.
    const newest = page.locator('tr[data-entry]').first();
    await newest.getByRole('link', { name: names.at(-1)! }).waitFor();
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('51–53 of 53 entries').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');
    await page.locator('tr[data-entry]').last().getByRole('link', { name: names[0]! }).click();
    await page.waitForURL(`**/console/tasks/projects/${names[0]}`, { timeout: WAIT_MS });
    await page.goBack();

    const verdict = page.getByTestId('chain-verdict');
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await verdict.getByText(/^The chain holds: \d+ entries checked\.$/).waitFor({ timeout: WAIT_MS });
    const checked = Number((await verdict.textContent())!.match(/(\d+) entries/)![1]);
    expect(checked).toBeGreaterThanOrEqual(53);

    const [entry] = (await server.api.get(`/api/v1/audit?resource_id=${names[10]}`)).body.data as { id: string; actor: { id: string } }[];
    const handle = openDatabase(server.database.options(1));
    try {
      await handle.db.updateTable('audit_log').set({ actor_id: 'someone-else' }).where('id', '=', entry!.id).execute();
      await page.getByRole('button', { name: 'Verify chain' }).click();
      await verdict.getByText(`The chain breaks at entry ${entry!.id}`).waitFor({ timeout: WAIT_MS });
    } finally {
      await handle.db.updateTable('audit_log').set({ actor_id: entry!.actor.id }).where('id', '=', entry!.id).execute();
      await handle.close();
    }
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await verdict.getByText(/^The chain holds/).waitFor({ timeout: WAIT_MS });
  });

  it('a sign-in without audit:read has no Audit log in its nav, the view says why, and the API refuses it', async () => {
    const key = await server.api.post('/api/v1/auth/keys', {
      role: 'viewer',
      scopes: ['runs:read', 'plans:read', 'events:read'],
      name: 'reads runs only',
    });
    expect(key.status, key.text).toBe(201);
    const page = await browser.open();
    await signIn(page, server, '/console/runs', key.body.data.key);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    expect(await nav.getByRole('link', { name: 'Audit log' }).count()).toBe(0);

    await page.goto(`${server.url}/console/audit`);
    await page.getByText('The audit log needs the audit:read permission, which this sign-in (viewer) lacks.').waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Verify chain' }).count()).toBe(0);
    // The server refuses the page's own session, and the key itself.
    for (const path of ['/api/v1/audit', '/api/v1/audit/verify']) {
      expect((await page.request.get(server.url + path)).status()).toBe(403);
      expect((await server.api.get(path, { key: key.body.data.key })).status).toBe(403);
    }
    // A viewer person reads every list, the audit log included.
    const viewer = await createPerson(server, `audit-viewer-${dialect}`, 'viewer');
    const other = await browser.open();
    await signIn(other, server, '/console/runs', viewer);
    await other.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await other.locator('tr[data-action="key.create"]').first().waitFor({ timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone and passes axe-core, filters and verdict shown', async () => {
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/audit?within=24h&outcome=allowed');
    await page.locator('tr[data-entry]').first().waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await page.getByTestId('chain-verdict').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await seriousAxeViolations(page)).toEqual([]);
  });
});
