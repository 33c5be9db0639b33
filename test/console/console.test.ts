import { expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { consoleAdmin, createPerson, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('the console in a browser', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it('signs in with a password from the server root, keeps the session on reload (cookie only), and signs out', async () => {
    const page = await browser.open();
    await page.goto(server.url + '/');
    expect(new URL(page.url()).pathname).toBe('/console');
    await signIn(page, server, '/console');
    const nav = page.getByRole('navigation', { name: 'Main' });
    for (const name of [
      'Overview',
      'Approvals',
      'Runs',
      'Plans',
      'Triggers',
      'Agents',
      'Dead letters',
      'Routines',
      'Tasks',
      'Artifacts',
      'Alerts',
      'Audit log',
      'Settings',
    ]) {
      await nav.getByRole('link', { name }).waitFor({ timeout: WAIT_MS });
    }
    await page.getByTestId('principal').getByText('console-admin (admin)').waitFor();
    const cookies = await page.context().cookies();
    expect(cookies.map((cookie) => [cookie.name, cookie.httpOnly, cookie.sameSite])).toEqual([['switchboard_session', true, 'Strict']]);
    // The CSRF token is in memory only: a reload reads it again from the session.
    await page.reload();
    await nav.getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    await expectNothingStored(page);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
    expect(await page.context().cookies()).toEqual([]);
    await page.reload();
    await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
  });

  it('exchanges an API key for a session and keeps no key in the browser', async () => {
    const created = await server.api.post('/api/v1/auth/keys', { role: 'viewer', name: 'exchanged in the console' });
    const page = await browser.open();
    await signIn(page, server, '/console/agents', created.body.data.key);
    await page.getByRole('heading', { name: 'Agents' }).waitFor({ timeout: WAIT_MS });
    await page.getByTestId('principal').getByText('viewer key').waitFor();
    await expectNothingStored(page);
    const stored = await page.evaluate<string>('JSON.stringify([localStorage, sessionStorage]) + document.cookie');
    expect(stored).not.toContain(created.body.data.key);
  });

  it('shows why a wrong key or password is refused, with the request id', async () => {
    browser.expectConsoleErrors(/status of 401/);
    const page = await browser.open();
    await signIn(page, server, '/console', 'sk_not_a_key_of_this_server');
    const alert = page.getByRole('alert');
    await alert.waitFor({ timeout: WAIT_MS });
    expect(await alert.textContent()).toMatch(/unauthorized, HTTP 401/);
    expect(await page.getByTestId('request-id').textContent()).toMatch(/^req_/);
    await page.getByLabel('API key').waitFor();

    const admin = await consoleAdmin(server);
    await signIn(page, server, '/console', { username: admin.username, password: 'not the password at all' });
    await page.getByRole('alert').filter({ hasText: 'Wrong username or password' }).waitFor({ timeout: WAIT_MS });
  });

  it('ends the session when its key is revoked meanwhile, saying why', async () => {
    browser.expectConsoleErrors(/status of 401/);
    const created = await server.api.post('/api/v1/auth/keys', { role: 'admin', name: 'revoked while signed in' });
    const page = await browser.open();
    await signIn(page, server, '/console/agents', created.body.data.key);
    await page.getByRole('heading', { name: 'Agents' }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.delete(`/api/v1/auth/keys/${created.body.data.id}`)).status).toBe(200);
    await page.getByRole('alert').filter({ hasText: 'unauthorized, HTTP 401' }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Username').waitFor();
  });

  it('returns to the sign-in page when the session ends, and to the same page after signing in again', async () => {
    browser.expectConsoleErrors(/status of 401/);
    const person = await createPerson(server, 'expiring-operator', 'operator');
    const page = await browser.open();
    await signIn(page, server, '/console', person);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Runs' }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    // A new password ends the user's sessions on the server: the console's next request is refused.
    const password = 'a brand new password';
    expect((await server.api.patch(`/api/v1/auth/users/${person.id}`, { password })).status).toBe(200);
    await page.getByRole('alert').filter({ hasText: 'HTTP 401' }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Password').fill(password);
    await page.getByLabel('Username').fill(person.username);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe('/console/runs');
  });

  it('lists an agent that registers and heartbeats through the API, and keeps a deep link through the sign-in', async () => {
    const page = await browser.open();
    // Before any agent: the empty state says what to do next.
    await signIn(page, server, '/console/agents');
    await page.getByText('No agents yet.').waitFor({ timeout: WAIT_MS });

    const agent = await server.agent('console-summarizer');
    expect((await agent.post('/api/v1/discovery/capabilities', { capability: 'text.summarize', groups: ['text'] })).status).toBe(201);
    expect((await agent.post('/api/v1/discovery/capabilities', { capability: 'text.translate' })).status).toBe(201);
    expect((await agent.post('/api/v1/discovery/heartbeat', { load: 0.25 })).status).toBe(200);

    const row = page.locator('tr[data-agent="console-summarizer"]');
    await row.waitFor({ timeout: WAIT_MS });
    await row.getByText('healthy', { exact: true }).waitFor();
    await row.getByText('text.translate').waitFor();
    expect(await row.textContent()).toMatch(/25 %.*text\.summarize.*text/);

    // Filters live in the URL: a deep link opens the same view, after signing in.
    const filtered = await browser.open();
    await signIn(filtered, server, '/console/agents?capability=image.*');
    await filtered.getByText('No agent matches these filters.').waitFor({ timeout: WAIT_MS });
    expect(new URL(filtered.url()).searchParams.get('capability')).toBe('image.*');
  });

  it('creates an API key, shows it once, and revokes it', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/settings');
    await page.getByRole('heading', { name: 'API keys' }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe('/console/settings/keys');

    await page.getByLabel('Name').fill('console test key');
    await page.getByLabel('Agent id').fill('console-worker');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('created-key');
    await shown.waitFor({ timeout: WAIT_MS });
    const key = await shown.inputValue();
    expect(key).toMatch(/^sk_/);
    expect((await server.api.get('/api/v1/auth/whoami', { key })).body.data).toMatchObject({ role: 'agent', agent_id: 'console-worker' });
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByTestId('created-key').count()).toBe(0);

    const row = page.locator('tr', { hasText: 'console test key' });
    await row.getByRole('button', { name: 'Revoke' }).click();
    await row.getByRole('button', { name: 'Confirm revoke' }).click();
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect((await server.api.get('/api/v1/auth/whoami', { key })).status).toBe(401);
    await page.getByLabel('Show revoked keys').check();
    await page.locator('tr', { hasText: 'console test key' }).getByText('revoked').waitFor({ timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone: the nav and the views stay usable, nothing overflows the page', async () => {
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/agents');
    await page.getByRole('heading', { name: 'Agents' }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });

  it('works from the keyboard alone: sign in, skip to the content, reach a view through the nav', async () => {
    const page = await browser.open();
    const focused = () => page.evaluate<string>('document.activeElement?.textContent ?? ""');
    const admin = await consoleAdmin(server);
    await page.goto(server.url + '/console/agents');
    // Once the form is there (the page's load event may come before React renders it), its username field has the focus.
    await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<string>('document.activeElement?.getAttribute("autocomplete") ?? ""')).toBe('username');
    await page.keyboard.type(admin.username);
    await page.keyboard.press('Tab');
    await page.keyboard.type(admin.password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Agents' }).waitFor({ timeout: WAIT_MS });
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    for (let tabs = 0; tabs < 20 && (await focused()) !== 'Settings'; tabs++) await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API keys' }).waitFor({ timeout: WAIT_MS });
  });

  it('follows the system colour scheme', async () => {
    const background = async (colorScheme: 'light' | 'dark') => {
      const page = await browser.open({ colorScheme });
      await page.goto(server.url + '/console');
      await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
      return page.evaluate<string>('getComputedStyle(document.documentElement).backgroundColor');
    };
    expect(await background('light')).toBe('rgb(247, 247, 248)');
    expect(await background('dark')).toBe('rgb(19, 20, 23)');
  });
});

/** Nothing in the tab's storage: the session is the HttpOnly cookie, its CSRF token in memory. */
async function expectNothingStored(page: Page): Promise<void> {
  expect(await page.evaluate<number>('localStorage.length + sessionStorage.length')).toBe(0);
}
