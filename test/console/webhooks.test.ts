import { afterEach, expect, it } from 'vitest';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

// The delivery worker looks for due deliveries often, so a delivery follows its event quickly.
const ENV = { SWITCHBOARD_WEBHOOK_POLL_MS: '50', SWITCHBOARD_WEBHOOK_TIMEOUT_MS: '2000' };

describeEachDialect('the console: webhooks', (dialect) => {
  const server = useServer(dialect, { env: ENV });
  const browser = useBrowser();
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  const createTask = async (title: string) => {
    const res = await server.api.post('/core/api/v1/tasks', { title });
    expect(res.status, res.text).toBe(201);
  };

  it('creates a webhook (the secret shown once), shows its delivery after an event, disables and deletes it', async () => {
    receiver = await startReceiver();
    const page = await browser.open();
    await signIn(page, server, '/console/settings/keys');
    await page.getByRole('navigation', { name: 'Settings' }).getByRole('link', { name: 'Webhooks' }).click();
    await page.getByText('No webhooks yet.').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe('/console/settings/webhooks');

    const form = page.getByRole('form', { name: 'Create a webhook' });
    await form.getByLabel('URL').fill(receiver.url);
    await form.getByLabel('Event types').fill('task.created, task.deleted');
    await form.getByLabel('Description').fill('console test receiver');
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const secret = page.getByTestId('webhook-secret');
    await secret.waitFor({ timeout: WAIT_MS });
    expect(await secret.inputValue()).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('webhook-secret').count()).toBe(0);
    const [webhook] = (await server.api.get('/api/v1/webhooks')).body.data;
    expect(webhook).toMatchObject({ url: receiver.url, types: ['task.created', 'task.deleted'], enabled: true });
    expect(webhook.secret).toBeUndefined();

    const row = page.locator(`tr[data-webhook="${webhook.id}"]`);
    await row.getByText('enabled').waitFor({ timeout: WAIT_MS });
    await row.getByRole('link', { name: 'Deliveries' }).click();
    await page.getByRole('heading', { name: receiver.url }).waitFor({ timeout: WAIT_MS });
    await page.getByText('No deliveries yet.').waitFor({ timeout: WAIT_MS });

    // An event of its types: delivered to the receiver, and shown in the log without a reload.
    await createTask('delivered to the console test');
    const [received] = await receiver.until(1);
    expect(JSON.parse(received!.body)).toMatchObject({ type: 'task.created' });
    const delivery = page.locator('tr[data-delivery]').first();
    await delivery.getByText('delivered').waitFor({ timeout: WAIT_MS });
    expect(await delivery.textContent()).toMatch(/task\.created.*delivered.*1.*204/);

    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByText('disabled', { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Enable' }).waitFor();
    expect((await server.api.get(`/api/v1/webhooks/${webhook.id}`)).body.data.enabled).toBe(false);

    await page.getByRole('link', { name: '← Webhooks' }).click();
    await row.getByText('disabled', { exact: true }).waitFor({ timeout: WAIT_MS });
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('No webhooks yet.').waitFor({ timeout: WAIT_MS });
  });

  it('shows a failed attempt with its status code, the answer and the next retry, and filters the log by status', async () => {
    receiver = await startReceiver(() => ({ status: 503, body: 'receiver busy' }));
    const created = await server.api.post('/api/v1/webhooks', { url: receiver.url, types: ['task.created'] });
    expect(created.status, created.text).toBe(201);
    const page = await browser.open();
    await signIn(page, server, `/console/settings/webhooks/${created.body.data.id}`);
    await page.getByText('No deliveries yet.').waitFor({ timeout: WAIT_MS });

    await createTask('refused by the receiver');
    await receiver.until(1);
    const delivery = page.locator('tr[data-delivery]').first();
    await delivery.getByRole('cell', { name: '503', exact: true }).waitFor({ timeout: WAIT_MS });
    expect(await delivery.textContent()).toMatch(/task\.created.*pending.*1.*503/);
    // The first retry comes 10 s after the first attempt.
    await delivery.getByText(/^in \d+s$/).waitFor({ timeout: WAIT_MS });
    await delivery.getByText('Response body').click();
    await delivery.getByText('receiver busy').waitFor();

    await page.getByLabel('Status').selectOption('delivered');
    await page.getByText('No delivered deliveries.').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('status')).toBe('delivered');
    await page.getByLabel('Status').selectOption('pending');
    await delivery.waitFor({ timeout: WAIT_MS });

    // Retried at once and refused again: each attempt is listed, not only the last.
    await delivery.getByRole('button', { name: 'Retry now' }).click();
    await receiver.until(2);
    await delivery.getByText('All attempts').waitFor({ timeout: WAIT_MS });
    await delivery.getByText('All attempts').click();
    const attempts = delivery.locator('li[data-attempt]');
    await attempts.nth(1).waitFor({ timeout: WAIT_MS });
    expect(await attempts.allTextContents()).toEqual([
      expect.stringMatching(/503 in \d+ ms — HTTP 503/),
      expect.stringMatching(/503 in \d+ ms — HTTP 503/),
    ]);
  });

  it('turns an agent key away from settings', async () => {
    const agent = await server.agent('console-not-admin');
    const key = agent.key!;
    const page = await browser.open();
    await signIn(page, server, '/console/settings/webhooks', key);
    await page.getByText('Webhooks needs the webhooks:admin permission, which this sign-in (agent) lacks.').waitFor({ timeout: WAIT_MS });
  });
});
