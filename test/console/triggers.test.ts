import { expect, it } from 'vitest';
import { createPerson, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const T = '/api/v1/coordination/triggers';

describeEachDialect('the console: plan triggers', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  const echoPlan = async (alias: string) => {
    const res = await server.api.post('/api/v1/coordination/plans', {
      alias: `${alias}-${dialect}`,
      steps: [{ id: 'echo', type: 'transform', output: { got: '{{input}}' } }],
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  };

  it('lists triggers with what sets them off, shows the fires with their runs, and disables and enables one', async () => {
    const plan = await echoPlan('triggered');
    const topic = `console.orders.${dialect}`;
    const onEvent = (await server.api.post(T, { plan_id: plan, type: 'event', config: { topic: `${topic}.*` } })).body.data;
    const scheduled = (
      await server.api.post(T, { plan_id: plan, type: 'schedule', config: { cron: '0 3 * * *', timezone: 'Europe/Paris' } })
    ).body.data;
    const shop = await server.agent(`shop-${dialect}`);
    expect((await shop.post('/api/v1/messaging/publish', { topic: `${topic}.paid`, payload: { id: 'o-1' } })).status).toBe(201);
    const fire = await waitFor(async () => (await server.api.get(`${T}/${onEvent.id}/fires`)).body.data[0]);
    expect(fire).toMatchObject({ outcome: 'started' });

    const page = await browser.open();
    await signIn(page, server, '/console');
    await page.getByRole('link', { name: 'Triggers', exact: true }).click();
    const row = page.locator(`tr[data-trigger="${onEvent.id}"]`);
    await row.getByText(`${topic}.*`).waitFor({ timeout: WAIT_MS });
    expect(await row.textContent()).toMatch(/event.*enabled/);
    const schedule = page.locator(`tr[data-trigger="${scheduled.id}"]`);
    await schedule.getByText('0 3 * * * Europe/Paris').waitFor({ timeout: WAIT_MS });
    expect(await schedule.textContent()).toContain('never');

    await row.getByText('Fires').click();
    const shown = row.locator(`li[data-fire="${fire.id}"]`);
    await shown.waitFor({ timeout: WAIT_MS });
    expect(await shown.textContent()).toContain('started');
    await shown.getByRole('link', { name: fire.run_id }).click();
    await page.waitForURL(`**/console/runs/${fire.run_id}`, { timeout: WAIT_MS });

    await page.goBack();
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByText('disabled', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${T}/${onEvent.id}`)).body.data.enabled).toBe(false);
    await row.getByRole('button', { name: 'Enable' }).click();
    await row.getByText('enabled', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${T}/${onEvent.id}`)).body.data.enabled).toBe(true);
  });

  it('shows a viewer the triggers without the buttons that change them', async () => {
    const plan = await echoPlan('viewed');
    const trigger = (await server.api.post(T, { plan_id: plan, type: 'webhook', config: { path: `viewed-${dialect}` } })).body.data;
    const viewer = await createPerson(server, `trigger-viewer-${dialect}`, 'viewer');
    const page = await browser.open();
    await signIn(page, server, '/console/triggers', viewer);
    const row = page.locator(`tr[data-trigger="${trigger.id}"]`);
    await row.getByText(`POST /api/v1/coordination/hooks/viewed-${dialect}`).waitFor({ timeout: WAIT_MS });
    expect(await row.getByRole('button').count()).toBe(0);
  });
});
