import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { acknowledge, receiveOne } from '../helpers/agent.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const R = '/core/api/v1/routines';

describeEachDialect('the console routines', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  /** Signs in at `path` and waits until the session's event stream is open (from then on no event is missed). */
  const openLive = async (page: Page, path: string) => {
    await signIn(page, server, path);
    await page.locator('[data-live="live"]').waitFor({ timeout: WAIT_MS });
  };

  it('says what to do when there are no routines yet', async () => {
    const page = await browser.open();
    await openLive(page, '/console/routines?state=paused');
    await page.getByText('No routine matches these filters.').waitFor({ timeout: WAIT_MS });
    await page.getByRole('link', { name: 'Show every routine' }).click();
    await page.getByText('No routines yet.').waitFor({ timeout: WAIT_MS });
  });

  it('pauses and resumes a routine, triggers it, and shows its execution and output live', async () => {
    browser.expectConsoleErrors(/status of 409/);
    const agent = await server.agent('console-reporter');
    const routine = (
      await server.api.post(R, {
        name: 'nightly report',
        trigger_type: 'cron',
        cron_expression: '0 3 * * *',
        timezone: 'Europe/Paris',
        target_agent: 'console-reporter',
      })
    ).body.data;
    const page = await browser.open();
    await openLive(page, '/console/routines');
    const row = page.locator(`tr[data-routine="${routine.id}"]`);
    await row.getByText('enabled', { exact: true }).waitFor({ timeout: WAIT_MS });

    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByText('paused', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${R}/${routine.id}`)).body.data).toMatchObject({ enabled: false, next_run_at: null });
    // A paused routine does not run, even by hand: the server says why.
    await row.getByRole('button', { name: 'Trigger now' }).click();
    await row
      .getByRole('alert')
      .getByText(/is paused/)
      .waitFor({ timeout: WAIT_MS });
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByText('enabled', { exact: true }).waitFor({ timeout: WAIT_MS });

    // Paused through the API meanwhile: the list follows without a reload.
    await server.api.patch(`${R}/${routine.id}`, { enabled: false, reason: 'maintenance' });
    await row.getByText('paused', { exact: true }).waitFor({ timeout: WAIT_MS });
    await server.api.patch(`${R}/${routine.id}`, { enabled: true });
    await row.getByText('enabled', { exact: true }).waitFor({ timeout: WAIT_MS });

    await row.getByRole('link', { name: 'nightly report' }).click();
    await page.getByRole('heading', { name: 'nightly report' }).waitFor({ timeout: WAIT_MS });
    await page.getByText('No executions yet.').waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Trigger now' }).click();
    const execution = page.locator('tr[data-execution]');
    await execution.getByText('manual').waitFor({ timeout: WAIT_MS });

    // The agent does the work: its output shows once it acknowledges, without a reload.
    const message = await receiveOne(agent, 'console-reporter');
    await acknowledge(agent, message.message_id, { rows: 1234, file: 'report.csv' });
    await execution.getByText('success', { exact: true }).waitFor({ timeout: WAIT_MS });
    await execution
      .getByRole('group', { name: /^Output of exe_/ })
      .getByText('report.csv', { exact: false })
      .waitFor({ timeout: WAIT_MS });

    // Triggered from elsewhere: a second execution appears.
    await server.api.post(`${R}/${routine.id}/trigger`, {});
    await expect.poll(() => execution.count(), { timeout: WAIT_MS }).toBe(2);
  });

  it('creates a routine with a cron schedule, previewing its next 5 fires in its time zone', async () => {
    const page = await browser.open();
    await openLive(page, '/console/routines');
    await page.getByRole('link', { name: 'New routine' }).click();
    await page.getByLabel('Name').fill('weekday digest');
    await page.getByLabel('Target agent').fill('digest-writer');
    await page.getByLabel('Time zone').fill('America/New_York');
    await page.getByLabel('Cron expression').fill('30 8 * * 1-5');
    const preview = page.getByTestId('cron-preview');
    await preview.getByText('Next 5 fires (America/New_York):').waitFor({ timeout: WAIT_MS });
    const fires = await preview.locator('li').allTextContents();
    expect(fires).toHaveLength(5);
    for (const fire of fires) expect(fire).toMatch(/^(Mon|Tue|Wed|Thu|Fri), .* 08:30 (EST|EDT)$/);
    await page.getByLabel('Payload (JSON, sent to the agent with every execution)').fill('{"sections": ["news"]}');
    await page.getByRole('button', { name: 'Create routine' }).click();

    await page.getByRole('heading', { name: 'weekday digest' }).waitFor({ timeout: WAIT_MS });
    const id = new URL(page.url()).pathname.split('/').at(-1);
    expect((await server.api.get(`${R}/${id}`)).body.data).toMatchObject({
      name: 'weekday digest',
      cron_expression: '30 8 * * 1-5',
      timezone: 'America/New_York',
      target_agent: 'digest-writer',
      payload: { sections: ['news'] },
      enabled: true,
    });

    // Edit: a new schedule, previewed the same way.
    await page.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Cron expression').fill('0 12 * * *');
    await preview.locator('li').first().getByText(/12:00/).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Save routine' }).click();
    await page.getByRole('button', { name: 'Edit' }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${R}/${id}`)).body.data.cron_expression).toBe('0 12 * * *');
  });

  it("shows the server's message for an invalid cron expression", async () => {
    browser.expectConsoleErrors(/status of 400/);
    const page = await browser.open();
    await openLive(page, '/console/routines/new');
    await page.getByLabel('Name').fill('broken schedule');
    await page.getByLabel('Target agent').fill('nobody');
    await page.getByLabel('Cron expression').fill('99 * * * *');
    await page
      .getByTestId('cron-preview')
      .getByText(/minute/)
      .waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Create routine' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('invalid_request, HTTP 400').waitFor({ timeout: WAIT_MS });
    const server400 = await server.api.post(R, { name: 'x', trigger_type: 'cron', cron_expression: '99 * * * *', target_agent: 'nobody' });
    const message = server400.body.error.details.find((d: { field: string }) => d.field === 'cron_expression').message;
    expect(await alert.textContent()).toContain(`cron_expression: ${message}`);
    await alert.getByTestId('request-id').waitFor();
    expect((await server.api.get(`${R}?limit=100`)).body.data.map((r: { name: string }) => r.name)).not.toContain('broken schedule');
  });
});
