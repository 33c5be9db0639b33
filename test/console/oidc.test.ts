import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const CLIENT_ID = 'switchboard-console';
const CLIENT_SECRET = 'a-test-client-secret-of-some-length';
/** The provider's people: the role claim it gives each (none: the server's default role applies). */
const ROLES: Record<string, string | undefined> = { grace: 'approver', linus: undefined };

/**
 * OIDC sign-in end to end (design §3, issue 38): a real OpenID provider (oidc-provider, with its
 * own login and consent pages) in this process, the server configured for it, and the browser
 * clicking through the provider's pages.
 */
describeEachDialect('the console: OIDC sign-in', (dialect) => {
  const env: Record<string, string> = {};
  let idp: Server;
  beforeAll(async () => {
    // The provider's address first: the server is configured with it, and the provider with the server's callback.
    idp = createServer();
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    Object.assign(env, {
      SWITCHBOARD_OIDC_ISSUER: `http://127.0.0.1:${(idp.address() as AddressInfo).port}`,
      SWITCHBOARD_OIDC_CLIENT_ID: CLIENT_ID,
      SWITCHBOARD_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      SWITCHBOARD_OIDC_ROLE_CLAIM: 'switchboard_role',
      SWITCHBOARD_OIDC_NAME: 'Test IdP',
    });
  });
  const server = useServer(dialect, { env });
  beforeAll(() => {
    const provider = new Provider(env.SWITCHBOARD_OIDC_ISSUER!, {
      clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [`${server.url}/api/v1/auth/oidc/callback`] }],
      claims: { openid: ['sub'], profile: ['preferred_username', 'name', 'switchboard_role'], email: ['email'] },
      cookies: { keys: ['a-test-cookie-key'] },
      findAccount: (_ctx, id) => ({
        accountId: id,
        claims: () => ({ sub: `subject-of-${id}`, preferred_username: id, name: `${id} at the IdP`, switchboard_role: ROLES[id] }),
      }),
    });
    idp.on('request', provider.callback());
  });
  afterAll(async () => {
    idp.closeAllConnections();
    await new Promise((resolve) => idp.close(resolve));
  });
  const browser = useBrowser();

  /** Clicks "Sign in with Test IdP" on the console's sign-in page at `path`, then through the provider's login and consent pages. */
  async function signInThroughProvider(path: string, login: string) {
    // The provider's pages load a web font from the internet, which this machine cannot reach, and it has no favicon.
    browser.expectConsoleErrors(/ERR_|fonts\.googleapis|status of 404/);
    const page = await browser.open();
    await page.goto(server.url + path);
    await page.getByRole('link', { name: 'Sign in with Test IdP' }).click();
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password will do');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    return page;
  }

  const userNamed = async (username: string) =>
    (await server.api.get('/api/v1/auth/users?limit=500')).body.data.find((user: { username: string }) => user.username === username);

  it('creates the user on the first sign-in with the role its claim maps to, and returns to where the person was', async () => {
    const page = await signInThroughProvider('/console/approvals', 'grace');
    await page.getByRole('heading', { name: 'Approvals' }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe('/console/approvals');
    await page.getByTestId('principal').getByText('grace (approver)').waitFor({ timeout: WAIT_MS });
    expect(await userNamed('grace')).toMatchObject({
      role: 'approver',
      display_name: 'grace at the IdP',
      has_password: false,
      disabled: false,
    });
    expect((await page.context().cookies()).find((cookie) => cookie.name === 'switchboard_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });

    // The next sign-in finds the same user (by issuer and sub), not a second one.
    const again = await signInThroughProvider('/console', 'grace');
    await again.getByTestId('principal').getByText('grace (approver)').waitFor({ timeout: WAIT_MS });
    const graces = (await server.api.get('/api/v1/auth/users?limit=500')).body.data.filter((user: { username: string }) =>
      user.username.startsWith('grace'),
    );
    expect(graces).toHaveLength(1);
  });

  it('gives the default role (viewer) without a role claim, and a disabled user no session', async () => {
    const page = await signInThroughProvider('/console', 'linus');
    await page.getByTestId('principal').getByText('linus (viewer)').waitFor({ timeout: WAIT_MS });
    const linus = await userNamed('linus');
    expect(linus.role).toBe('viewer');

    // Disabling ends the open session: the first page's event stream is refused from then on.
    browser.expectConsoleErrors(/status of 401/);
    expect((await server.api.patch(`/api/v1/auth/users/${linus.id}`, { disabled: true })).status).toBe(200);
    const refused = await signInThroughProvider('/console', 'linus');
    await refused.getByRole('alert').getByText('The user of these credentials is disabled').waitFor({ timeout: WAIT_MS });
    await refused.getByLabel('Username').waitFor();
  });

  it('refuses a callback that no sign-in in this browser started, back on the sign-in page', async () => {
    const page = await browser.open();
    await page.goto(`${server.url}/api/v1/auth/oidc/callback?code=stolen&state=guessed`);
    await page
      .getByRole('alert')
      .getByText(/No sign-in was started in this browser/)
      .waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('sign_in_error')).toBeNull();
  });
});
