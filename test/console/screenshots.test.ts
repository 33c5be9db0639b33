import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { useServer } from '../helpers/server.js';

/** Where the run writes its screenshots (the README shows copies of the best ones from docs/screenshots). */
const SHOTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/screenshots');

describe('screenshots of the console', () => {
  // OIDC configured (never contacted: the sign-in page only names the provider) to show its button.
  const server = useServer('sqlite', {
    env: {
      SWITCHBOARD_OIDC_ISSUER: 'https://id.example.com',
      SWITCHBOARD_OIDC_CLIENT_ID: 'switchboard',
      SWITCHBOARD_OIDC_NAME: 'Example ID',
    },
  });
  const browser = useBrowser();

  it('writes the main views with data in them', async () => {
    await mkdir(SHOTS, { recursive: true });
    const worker = await server.agent('release-builder');
    expect((await worker.post('/api/v1/discovery/capabilities', { capability: 'release.build', groups: ['release'] })).status).toBe(201);
    expect((await worker.post('/api/v1/discovery/heartbeat', { load: 0.3 })).status).toBe(200);
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: 'release',
      steps: [
        { id: 'build', type: 'agent', agent: 'release-builder', input: { version: '{{input.version}}' } },
        {
          id: 'gate',
          type: 'human_approval',
          prompt: 'Ship {{input.version}} to production?',
          depends_on: ['build'],
          approvers: ['user:console-admin'],
        },
        { id: 'announce', type: 'agent', agent: 'release-builder', depends_on: ['gate'] },
      ],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post('/api/v1/coordination/runs', { plan_id: 'release', input: { version: '2.4.0' } });
    const step = await worker.get('/api/v1/messaging/receive?agent_id=release-builder&timeout=5');
    await worker.post('/api/v1/messaging/acknowledge', {
      message_id: step.body.data.messages[0].message_id,
      output: { artifact: 'release-2.4.0.tgz' },
    });

    const page = await browser.open();
    await page.goto(`${server.url}/console`);
    await page.getByRole('link', { name: 'Sign in with Example ID' }).waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'sign-in.png') });
    await signIn(page, server, '/console');
    await page.locator('[data-live="live"]').waitFor({ timeout: WAIT_MS });
    await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: WAIT_MS });
    // The feed shows what happens while the page is open.
    const announcer = await server.agent('release-announcer');
    await announcer.post('/api/v1/discovery/capabilities', { capability: 'release.announce', groups: ['release'] });
    await page.getByText('agent.registered').first().waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'overview.png') });

    await page.goto(`${server.url}/console/approvals`);
    await page.locator('[data-list="mine"]').getByText('Ship 2.4.0 to production?').waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'approvals.png') });

    await page.goto(`${server.url}/console/runs/${run.body.data.id}`);
    await page.locator('.react-flow__node').first().waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'run.png'), fullPage: true });

    await page.goto(`${server.url}/console/agents`);
    await page.locator('tr[data-agent="release-builder"]').waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'agents.png') });

    await page.goto(`${server.url}/console/audit`);
    await page.locator('tr[data-action="run.start"]').waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Verify chain' }).click();
    await page.getByTestId('chain-verdict').waitFor({ timeout: WAIT_MS });
    await page.screenshot({ path: path.join(SHOTS, 'audit.png') });
  });
});
