import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { receiveOne, reject } from '../helpers/agent.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/** The number an overview figure shows (`—` while loading is not a number: wait for one). */
async function figure(page: Page, panel: string, label: string): Promise<number> {
  const value = page.getByRole('region', { name: panel }).locator(`[data-figure="${label}"] dd`);
  await expect.poll(async () => Number.isInteger(Number(await value.textContent())), { timeout: WAIT_MS }).toBe(true);
  return Number(await value.textContent());
}

/** Waits until the figure shows `expected`, without a reload. */
async function figureBecomes(page: Page, panel: string, label: string, expected: number) {
  await page
    .getByRole('region', { name: panel })
    .locator(`[data-figure="${label}"] dd`, { hasText: new RegExp(`^${expected}$`) })
    .waitFor({ timeout: WAIT_MS });
}

describeEachDialect('the console overview', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  /** Signs in at `path` and waits until the session's event stream is open (from then on no event is missed). */
  const openLive = async (page: Page, path: string) => {
    await signIn(page, server, path);
    await page.locator('[data-live="live"]').waitFor({ timeout: WAIT_MS });
  };

  // First: an agent's later health changes (the next test's) would fill the feed this test expects empty.
  it('feeds events caused through the API, with a link to the subject’s view', async () => {
    const page = await browser.open();
    await openLive(page, '/console');
    await page.getByText('Nothing has happened since you opened the console.').waitFor({ timeout: WAIT_MS });

    const task = (await server.api.post('/core/api/v1/tasks', { title: 'seen live' })).body.data;
    const feed = page.getByRole('region', { name: 'Live events' });
    await feed.locator('li[data-event="task.created"]', { hasText: task.id }).waitFor({ timeout: WAIT_MS });

    const routine = (await server.api.post('/core/api/v1/routines', { name: 'fed', trigger_type: 'webhook', target_agent: 'nobody' })).body
      .data;
    expect((await server.api.post(`/core/api/v1/routines/${routine.id}/trigger`, { reason: 'from the test' })).status).toBe(202);
    const triggered = feed.locator('li[data-event="routine.triggered"]');
    await triggered.getByRole('link', { name: routine.id }).click();
    await page.getByRole('heading', { name: 'fed' }).waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe(`/console/routines/${routine.id}`);
  });

  it('shows an agent that registers and heartbeats, live on the Overview and the Agents view', async () => {
    const overview = await browser.open();
    await openLive(overview, '/console');
    await overview.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: WAIT_MS });
    const healthy = await figure(overview, 'Agents', 'healthy');
    const agents = await browser.open();
    await openLive(agents, '/console/agents');

    const agent = await server.agent('overview-worker');
    expect((await agent.post('/api/v1/discovery/capabilities', { capability: 'report.write' })).status).toBe(201);
    expect((await agent.post('/api/v1/discovery/heartbeat', { load: 0.5 })).status).toBe(200);
    // agent.registered, then agent.health_changed once the health worker sees the heartbeat.
    await agents.locator('tr[data-agent="overview-worker"]').getByText('healthy', { exact: true }).waitFor({ timeout: WAIT_MS });
    await figureBecomes(overview, 'Agents', 'healthy', healthy + 1);
  });

  it('counts runs of the last 24 h by status, dead letters and failing routines, live', async () => {
    const page = await browser.open();
    await openLive(page, '/console');
    const waiting = await figure(page, 'Runs in the last 24 h', 'waiting');
    const plan = (
      await server.api.post('/api/v1/coordination/plans', {
        alias: `overview-gate-${dialect}`,
        steps: [{ id: 'gate', type: 'human_approval', prompt: 'ok?' }],
      })
    ).body.data;
    expect((await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} })).status).toBe(201);
    await figureBecomes(page, 'Runs in the last 24 h', 'waiting', waiting + 1);

    const failing = page.getByRole('region', { name: 'Failing routines' });
    await failing.getByText('None:').waitFor({ timeout: WAIT_MS });
    const deadLetters = await figure(page, 'Inboxes', 'dead letters');
    const agent = await server.agent('overview-failer');
    const routine = (
      await server.api.post('/core/api/v1/routines', { name: 'always fails', trigger_type: 'webhook', target_agent: 'overview-failer' })
    ).body.data;
    await server.api.post(`/core/api/v1/routines/${routine.id}/trigger`, {});
    await reject(agent, (await receiveOne(agent, 'overview-failer')).message_id, 'cannot write the report', false);
    await failing.getByRole('link', { name: 'always fails' }).waitFor({ timeout: WAIT_MS });
    // The rejected message went to the dead letters (message.dead_lettered).
    await figureBecomes(page, 'Inboxes', 'dead letters', deadLetters + 1);
  });

  it('fits a 390 px wide phone', async () => {
    const page = await browser.open({ width: 390, height: 844 });
    await openLive(page, '/console');
    await page.getByRole('region', { name: 'Live events' }).waitFor({ timeout: WAIT_MS });
    await server.api.post('/core/api/v1/tasks', { title: 'a task with a long enough title to wrap on a phone' });
    await page.locator('li[data-event="task.created"]').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
