import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describeEachDialect('the console: alerts and notifications', (dialect) => {
  // The evaluator passes often, so a rule fires soon after its condition holds.
  const server = useServer(dialect, { env: { SWITCHBOARD_ALERT_INTERVAL_MS: '100' } });
  const browser = useBrowser();
  const expectNoSerious = async (page: Page, view: string) => expect(await seriousAxeViolations(page), view).toEqual([]);

  it('creates channels and a previewed rule, shows its alert firing on the overview, acknowledges, silences and deletes', async () => {
    const triage = `triage-console-${dialect}`;
    const page = await browser.open();
    await signIn(page, server, '/console/settings/keys');
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Notification channels' }).click();
    await page.getByText('No channels yet.').waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'notification channels');

    // A webhook channel: its secret shown once.
    const channelForm = page.getByRole('form', { name: 'Create a channel' });
    await channelForm.getByLabel('Name').fill('ops hook');
    await channelForm.getByLabel('URL').fill('http://127.0.0.1:9/alerts');
    await channelForm.getByRole('button', { name: 'Create channel' }).click();
    const secret = page.getByTestId('channel-secret');
    await secret.waitFor({ timeout: WAIT_MS });
    expect(await secret.inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('channel-secret').count()).toBe(0);

    // An agent channel, and its test notification in the agent's inbox.
    await channelForm.getByLabel('Type').selectOption('agent');
    await channelForm.getByLabel('Name').fill('triage');
    await channelForm.getByLabel('Agent id').fill(triage);
    await channelForm.getByRole('button', { name: 'Create channel' }).click();
    await page.locator('tr[data-channel]').nth(1).waitFor({ timeout: WAIT_MS });
    const channels = (await server.api.get('/api/v1/notifications/channels')).body.data as { id: string; type: string }[];
    expect(channels.map((c) => c.type).sort()).toEqual(['agent', 'webhook']);
    expect(JSON.stringify(channels)).not.toMatch(/whsec_/);
    const agentChannel = channels.find((c) => c.type === 'agent')!;
    const row = page.locator(`tr[data-channel="${agentChannel.id}"]`);
    await row.getByRole('button', { name: 'Send test' }).click();
    await row.getByText('Test sent').waitFor({ timeout: WAIT_MS });
    const inbox = (await server.api.get(`/api/v1/messaging/inboxes/${triage}/messages`)).body.data;
    expect(inbox).toHaveLength(1);

    // A rule: its condition previewed before and after it holds, then created.
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Alert rules' }).click();
    await page.getByText('No alert rules yet.').waitFor({ timeout: WAIT_MS });
    const ruleForm = page.getByRole('form', { name: 'Create a rule' });
    await ruleForm.getByLabel('Name', { exact: true }).fill('console tasks');
    await ruleForm.getByLabel('Severity').selectOption('critical');
    await ruleForm.getByLabel('Event type').fill('task.created');
    await ruleForm.getByLabel('Window (s)').fill('600');
    await ruleForm.getByLabel('Threshold').fill('2');
    await ruleForm.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('rule-preview');
    await preview.getByText('Does not hold now.').waitFor({ timeout: WAIT_MS });
    expect(await preview.getByRole('list', { name: 'The last hour' }).getByRole('listitem').count()).toBe(12);
    await expectNoSerious(page, 'alert rules with a preview');

    for (const title of ['one', 'two']) expect((await server.api.post('/core/api/v1/tasks', { title })).status).toBe(201);
    await ruleForm.getByRole('button', { name: 'Preview' }).click();
    await preview.getByText('Holds now: a rule on it would fire.').waitFor({ timeout: WAIT_MS });
    expect(await preview.textContent()).toContain('2 task.created events in the last 600 s');

    await ruleForm.getByLabel('triage (agent)').check();
    await ruleForm.getByRole('button', { name: 'Create rule' }).click();
    await page.locator('tr[data-rule]').waitFor({ timeout: WAIT_MS });
    const [rule] = (await server.api.get('/api/v1/alerts/rules')).body.data;
    expect(rule).toMatchObject({ name: 'console tasks', severity: 'critical', channels: [agentChannel.id], enabled: true });
    const ruleRow = page.locator(`tr[data-rule="${rule.id}"]`);
    await ruleRow.getByText('enabled').waitFor({ timeout: WAIT_MS });

    // The alert fires: on the overview, then acknowledged in the Alerts list.
    await waitFor(async () => (await server.api.get('/api/v1/alerts?state=firing')).body.data.length === 1, WAIT_MS);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();

    const firing = page.getByRole('list', { name: 'Firing alerts' });
    await firing.getByText('console tasks').waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'overview with a firing alert');
    await page.getByRole('link', { name: 'All alerts' }).click();
    const alertRow = page.locator('tr[data-alert]').first();
    await alertRow.getByText('firing').waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'alerts');
    await alertRow.getByRole('button', { name: 'Acknowledge' }).click();
    await alertRow.getByText(/acknowledged by/).waitFor({ timeout: WAIT_MS });
    const [alert] = (await server.api.get('/api/v1/alerts?state=firing')).body.data;
    expect(alert).toMatchObject({ rule_id: rule.id, value: 2 });
    expect(alert.acknowledged_at).not.toBeNull();

    // Silence, disable, delete.
    await page.goto(`${server.url}/console/settings/alert-rules`);
    await ruleRow.getByLabel('Silence console tasks until').fill('2099-01-01T12:00');
    await ruleRow.getByRole('button', { name: 'Silence' }).click();
    await ruleRow.getByText('silenced until').waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`/api/v1/alerts/rules/${rule.id}`)).body.data.silenced_until).toMatch(/^2099-01-01/);
    await ruleRow.getByRole('button', { name: 'Disable' }).click();
    await ruleRow.getByText('disabled').waitFor({ timeout: WAIT_MS });
    await ruleRow.getByRole('button', { name: 'Delete' }).click();
    await ruleRow.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('No alert rules yet.').waitFor({ timeout: WAIT_MS });
  });

  it('the channels, rules and alerts pages at 390 px: no serious axe finding, nothing wider than the screen', async () => {
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/settings/alert-rules');
    await page.getByRole('heading', { name: 'Alert rules', exact: true }).waitFor({ timeout: WAIT_MS });
    for (const [path, heading] of [
      ['/console/settings/alert-rules', 'Alert rules'],
      ['/console/settings/notification-channels', 'Notification channels'],
      ['/console/alerts', 'Alerts'],
    ] as const) {
      await page.goto(server.url + path);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor({ timeout: WAIT_MS });
      await expectNoSerious(page, path);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(390);
    }
  });
});
