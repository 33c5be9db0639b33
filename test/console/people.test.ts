import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { createPerson, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { signInAttempt } from '../helpers/session.js';

const C = '/api/v1/coordination';

/** People in the console (issue 38): what a role shows, the approvals inbox per person, users and own keys. */
describeEachDialect('the console: people and roles', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let plans = 0;

  /** Starts a run waiting at a human_approval step `gate` with these approvers; its id. */
  async function waitingRun(approvers: string[]): Promise<string> {
    const plan = await server.api.post(`${C}/plans`, {
      alias: `console-people-${dialect}-${++plans}`,
      steps: [
        { id: 'gate', type: 'human_approval', prompt: `Ship ${plans}?`, approvers },
        { id: 'after', type: 'transform', output: { shipped: true }, depends_on: ['gate'] },
      ],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
    expect(run.status, run.text).toBe(201);
    return run.body.data.id;
  }

  const card = (page: Page, list: 'mine' | 'others', runId: string) =>
    page.locator(`[data-list="${list}"] li.approval[data-run="${runId}"]`);

  it('a viewer sees waiting steps and runs but no action, and a request crafted in the page is refused', async () => {
    browser.expectConsoleErrors(/status of 403/);
    const viewer = await createPerson(server, `viewer-${dialect}`, 'viewer');
    const runId = await waitingRun([]);
    const page = await browser.open();
    await signIn(page, server, '/console/approvals', viewer);
    const waiting = card(page, 'others', runId);
    await waiting.getByText('Deciding human steps needs the approvals:decide permission').waitFor({ timeout: WAIT_MS });
    expect(await waiting.getByRole('button', { name: 'Approve' }).count()).toBe(0);

    await page.goto(`${server.url}/console/runs/${runId}`);
    await page.getByRole('heading', { name: runId }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    await page.locator(`tr[data-run="${runId}"]`).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Start a run' }).count()).toBe(0);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Routines' }).click();
    await page.getByRole('heading', { name: 'Routines' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('link', { name: 'New routine' }).count()).toBe(0);

    // The server still refuses: the page's own session (cookie and CSRF token) cannot approve.
    const status = await page.evaluate<number, string>(async (path) => {
      const session = (await (await fetch('/api/v1/auth/sessions/current')).json()) as { data: { csrf_token: string } };
      const answer = await fetch(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.data.csrf_token },
        body: JSON.stringify({ approved: true }),
      });
      return answer.status;
    }, `${C}/runs/${runId}/steps/gate/approve`);
    expect(status).toBe(403);
    expect((await server.api.get(`${C}/runs/${runId}`)).body.data.status).toBe('waiting');
  });

  it('puts the steps naming a person or their role under "Waiting for you", and the person decides them as themselves', async () => {
    const approver = await createPerson(server, `approver-${dialect}`, 'approver');
    const forMe = await waitingRun([`user:${approver.username}`]);
    const forMyRole = await waitingRun(['role:approver']);
    const forSomeoneElse = await waitingRun(['user:somebody-else']);
    const page = await browser.open();
    await signIn(page, server, '/console/approvals', approver);
    await card(page, 'mine', forMe).waitFor({ timeout: WAIT_MS });
    await card(page, 'mine', forMyRole).waitFor({ timeout: WAIT_MS });
    const notMine = card(page, 'others', forSomeoneElse);
    await notMine.getByText('Only user:somebody-else (or an admin) may decide this step.').waitFor({ timeout: WAIT_MS });
    expect(await notMine.getByRole('button', { name: 'Approve' }).count()).toBe(0);

    const mine = card(page, 'mine', forMe);
    await mine.getByLabel('Comment').fill('mine to ship');
    await mine.getByRole('button', { name: 'Approve' }).click();
    await mine.waitFor({ state: 'detached', timeout: WAIT_MS });
    const run = (await server.api.get(`${C}/runs/${forMe}`)).body.data;
    expect(run.status).toBe('completed');
    expect(run.steps.find((step: { id: string }) => step.id === 'gate').output).toMatchObject({
      approved: true,
      comment: 'mine to ship',
      decided_by: approver.id,
    });
  });

  it('lets an admin create a user (the one-time password shown once), change its role and disable it', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/settings/users');
    await page.getByRole('heading', { name: 'Users' }).waitFor({ timeout: WAIT_MS });
    const username = `newcomer-${dialect}`;
    const form = page.locator('form', { hasText: 'Create a user' });
    await form.getByLabel('Username').fill(username);
    await form.getByLabel('Role').selectOption('approver');
    await page.getByRole('button', { name: 'Create user' }).click();
    const shown = page.getByTestId('one-time-password');
    await shown.waitFor({ timeout: WAIT_MS });
    const password = await shown.inputValue();
    expect((await signInAttempt(server.url, { username, password })).status).toBe(201);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await shown.count()).toBe(0);

    const row = page.locator(`tr[data-user="${username}"]`);
    await row.getByLabel(`Role of ${username}`).selectOption('operator');
    const userOf = async () =>
      (await server.api.get('/api/v1/auth/users?limit=500')).body.data.find((user: { username: string }) => user.username === username);
    await expect.poll(async () => (await userOf()).role, { timeout: WAIT_MS }).toBe('operator');
    await row.getByRole('button', { name: 'Disable' }).click();
    await row.getByRole('button', { name: 'Confirm disable' }).click();
    await row.getByText('disabled', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await userOf()).disabled).toBe(true);
    expect((await signInAttempt(server.url, { username, password })).status).toBe(401);
  });

  it('lets a person create a key of their own with scopes and an expiry, and revoke it', async () => {
    const operator = await createPerson(server, `key-maker-${dialect}`, 'operator');
    const page = await browser.open();
    await signIn(page, server, '/console/settings/my-keys', operator);
    await page.getByRole('heading', { name: 'Your keys' }).waitFor({ timeout: WAIT_MS });
    // An operator manages webhooks, notification channels, alert rules, budgets and their own keys, not others' keys or users.
    expect(await page.getByRole('navigation', { name: 'Settings' }).getByRole('link').allTextContents()).toEqual([
      'Webhooks',
      'Notification channels',
      'Alert rules',
      'Budgets',
      'Your keys',
    ]);
    await page.getByLabel('Name').fill('read-only laptop');
    await page.getByRole('checkbox', { name: 'runs:read' }).check();
    await page.getByLabel('Expires after').selectOption({ label: '90 days' });
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('created-key');
    await shown.waitFor({ timeout: WAIT_MS });
    const key = await shown.inputValue();
    const me = (await server.api.withKey(key).get('/api/v1/auth/whoami')).body.data;
    expect(me).toMatchObject({ kind: 'user', username: operator.username, permissions: ['runs:read'] });

    const row = page.locator('tr', { hasText: 'read-only laptop' });
    await row.getByText('runs:read').waitFor({ timeout: WAIT_MS });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm revoke' }).click();
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect((await server.api.withKey(key).get('/api/v1/auth/whoami')).status).toBe(401);
  });
});
