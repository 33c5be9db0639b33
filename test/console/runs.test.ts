import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { acknowledge, receiveOne, reject } from '../helpers/agent.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const PLANS = '/api/v1/coordination/plans';
const RUNS = '/api/v1/coordination/runs';

describeEachDialect('the console: runs and plans', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  /** A plan whose first step is done by `worker`, then a transform of its output. */
  async function workPlan(worker: string, alias = unique('work')) {
    const res = await server.api.post(PLANS, {
      alias,
      description: 'Work, then report',
      steps: [
        { id: 'work', type: 'agent', agent: worker, input: { topic: '{{input.topic}}' } },
        { id: 'report', type: 'transform', output: { done: '{{steps.work.output.result}}' }, depends_on: ['work'] },
      ],
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; alias: string };
  }

  async function startRun(planId: string, input: Record<string, unknown> = {}) {
    const res = await server.api.post(RUNS, { plan_id: planId, input });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string };
  }

  /** A step's node in the plan graph, by its status as the node says it. */
  const graphNode = (page: Page, step: string, status?: string) =>
    page.locator(`.plan-graph [data-step="${step}"]${status ? `[data-status="${status}"]` : ''}`);

  it('lists plans (empty state first), shows a plan with its graph and steps, and its earlier versions', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/plans');
    await page.getByText('No plans yet.').waitFor({ timeout: WAIT_MS });

    const plan = await workPlan('plan-viewer');
    const v2 = await server.api.put(`${PLANS}/${plan.alias}`, {
      alias: plan.alias,
      description: 'Work, then report',
      steps: [{ id: 'only', type: 'transform', output: { ok: true } }],
    });
    expect(v2.status, v2.text).toBe(200);
    await page.reload();
    const row = page.locator(`tr[data-plan="${plan.alias}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.textContent()).toMatch(/Work, then report.*1.*2/);
    await row.getByRole('link', { name: plan.alias }).click();

    await page.getByRole('heading', { name: plan.alias, exact: true }).waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'only').waitFor({ timeout: WAIT_MS });
    await page.getByRole('figure', { name: `Steps of plan ${plan.alias}, version 2` }).waitFor();
    await page.getByRole('combobox', { name: 'Version' }).selectOption('1');
    await graphNode(page, 'report').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('version')).toBe('1');
    // Each node says what it is and what it follows, for a screen reader.
    expect(await page.locator('.react-flow__node[data-id="report"]').getAttribute('aria-label')).toBe('Step report, transform; after work');
    expect(await graphNode(page, 'only').count()).toBe(0);
    await page.locator('tr[data-step="work"]').getByText('agent plan-viewer').waitFor();
    await page.getByText('No runs of this plan yet').waitFor();
  });

  it('starts a run of a plan from the console and follows it live while an agent completes its step', async () => {
    const worker = unique('runs-worker');
    const agent = await server.agent(worker);
    const plan = await workPlan(worker);
    const page = await browser.open();
    await signIn(page, server, `/console/plans/${plan.id}`);

    // The form starts from the fields the plan reads; a non-object is refused before any request.
    const input = page.getByLabel('Input (a JSON object)');
    await input.waitFor({ timeout: WAIT_MS });
    expect(JSON.parse(await input.inputValue())).toEqual({ topic: null });
    await input.fill('[1, 2]');
    await page.getByRole('button', { name: 'Start run' }).click();
    await page.getByRole('alert').getByText('The input must be a JSON object').waitFor();
    await input.fill('{"topic": "tides"}');
    await page.getByRole('button', { name: 'Start run' }).click();

    await page.waitForURL(/\/console\/runs\/run_/, { timeout: WAIT_MS });
    const runId = new URL(page.url()).pathname.split('/').pop()!;
    const heading = page.locator('.view-heading');
    await heading.getByText('running', { exact: true }).waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'work', 'running').waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'report', 'pending').waitFor();

    const message = await receiveOne(agent, worker);
    expect(message.payload.input).toEqual({ topic: 'tides' });
    await acknowledge(agent, message.message_id, { result: 'high at noon' });

    // No reload: the page follows the run.
    await heading.getByText('completed', { exact: true }).waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'work', 'completed').waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'report', 'completed').waitFor({ timeout: WAIT_MS });
    const work = page.locator('.timeline-step[data-step="work"]');
    expect(await work.textContent()).toMatch(/1 attempt/);
    await work.getByText('Input and output of work').click();
    await work.getByLabel('Output of work').getByText('"high at noon"').waitFor();
    await page.getByRole('group', { name: 'Run output' }).getByText('"high at noon"').waitFor();
    await page.getByRole('rowheader', { name: 'run.completed' }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${RUNS}/${runId}`)).body.data.status).toBe('completed');
  });

  it('keeps the runs filters in the URL through a reload, and pages on the server', async () => {
    const plan = await workPlan(unique('idle-worker'));
    const other = await workPlan(unique('idle-worker'));
    const ours = [];
    for (let i = 0; i < 27; i++) ours.push(await startRun(plan.id, { topic: i }));
    await startRun(other.id);
    const page = await browser.open();
    await signIn(page, server, '/console/runs');
    await page.getByRole('heading', { name: 'Runs' }).waitFor({ timeout: WAIT_MS });

    const filters = page.getByRole('search', { name: 'Filter runs' });
    await filters.getByLabel('Plan').fill(plan.alias);
    await filters.getByLabel('Status').selectOption('running');
    await filters.getByLabel('Started').selectOption('24h');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('1–25 of 27 runs').waitFor({ timeout: WAIT_MS });
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ plan: plan.alias, status: 'running', within: '24h' });
    // Newest first.
    expect(await page.locator('tr[data-run]').first().getAttribute('data-run')).toBe(ours.at(-1)!.id);

    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('26–27 of 27 runs').waitFor({ timeout: WAIT_MS });
    await page.reload();
    await page.getByText('26–27 of 27 runs').waitFor({ timeout: WAIT_MS });
    expect(await filters.getByLabel('Plan').inputValue()).toBe(plan.alias);
    expect(await filters.getByLabel('Status').inputValue()).toBe('running');
    expect(await filters.getByLabel('Started').inputValue()).toBe('24h');
    expect(await page.locator('tr[data-run]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run')))).toEqual([
      ours[1]!.id,
      ours[0]!.id,
    ]);

    // A window that ended before these runs began matches none.
    await filters.getByLabel('Started').selectOption('between');
    await filters.getByLabel('Until').fill('2020-01-01T00:00');
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No run matches these filters.').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('to')).toMatch(/^2020-01-01T/);
  });

  it("finds runs by a tag they were started with, and shows each run's tags", async () => {
    const plan = await workPlan(unique('idle-worker'));
    const tag = `order:${unique('o')}`;
    const tagged = await server.api.post(RUNS, { plan_id: plan.id, input: {}, tags: [tag, 'env=prod'] });
    expect(tagged.status, tagged.text).toBe(201);
    await startRun(plan.id);
    const page = await browser.open();
    await signIn(page, server, '/console/runs');
    const filters = page.getByRole('search', { name: 'Filter runs' });
    await filters.getByLabel('Tag').fill(tag);
    await filters.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator(`tr[data-run="${tagged.body.data.id}"]`);
    await page.waitForURL((url) => url.searchParams.get('tag') === tag, { timeout: WAIT_MS });
    await row.waitFor({ timeout: WAIT_MS });
    await page.locator('tr[data-run]').nth(1).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(await row.getByRole('list', { name: 'Tags' }).getByRole('listitem').allTextContents()).toEqual(['env=prod', tag]);
  });

  it("finds runs by a value of the metadata they were started with, and shows each run's metadata", async () => {
    const plan = await workPlan(unique('idle-worker'));
    const customer = unique('acme');
    const labelled = await server.api.post(RUNS, { plan_id: plan.id, input: {}, metadata: { customer, region: 'eu' } });
    expect(labelled.status, labelled.text).toBe(201);
    await server.api.post(RUNS, { plan_id: plan.id, input: {}, metadata: { customer: `${customer}-other` } });
    const page = await browser.open();
    await signIn(page, server, '/console/runs');
    const filters = page.getByRole('search', { name: 'Filter runs' });
    await filters.getByLabel('Metadata').fill(`customer=${customer}`);
    await filters.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((url) => url.searchParams.get('metadata') === `customer=${customer}`, { timeout: WAIT_MS });
    const row = page.locator(`tr[data-run="${labelled.body.data.id}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    await page.locator('tr[data-run]').nth(1).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(await row.getByRole('list', { name: 'Metadata' }).getByRole('listitem').allTextContents()).toEqual([
      `customer=${customer}`,
      'region=eu',
    ]);
    // The filter is in the URL: a reload keeps it.
    await page.reload();
    await row.waitFor({ timeout: WAIT_MS });
    expect(await page.locator('tr[data-run]').count()).toBe(1);
  });

  it('cancels a run with a reason, and redrives a failed one', async () => {
    const worker = unique('flaky-worker');
    const agent = await server.agent(worker);
    const plan = await workPlan(worker);
    const doomed = await startRun(plan.id);
    const page = await browser.open();
    await signIn(page, server, `/console/runs/${doomed.id}`);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByLabel('Reason (kept in the audit log)').fill('wrong topic');
    await page.getByRole('button', { name: 'Confirm cancel' }).click();
    await page.locator('.view-heading').getByText('cancelled', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${RUNS}/${doomed.id}`)).body.data.status).toBe('cancelled');
    await page.getByRole('rowheader', { name: 'run.cancelled' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);

    // Cancelling took the step's message back: the next one is the new run's, rejected for good.
    const failing = await startRun(plan.id);
    const message = await receiveOne(agent, worker);
    expect(message.payload.run_id).toBe(failing.id);
    await reject(agent, message.message_id, 'no such topic', false);
    await page.goto(`${server.url}/console/runs/${failing.id}`);
    await page.locator('.view-heading').getByText('failed', { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.locator('.timeline-step[data-step="work"]').getByText('no such topic').waitFor();
    await page.getByRole('button', { name: 'Redrive run' }).click();
    await page.getByRole('button', { name: 'Confirm redrive' }).click();
    await page.locator('.view-heading').getByText('running', { exact: true }).waitFor({ timeout: WAIT_MS });
    await graphNode(page, 'work', 'running').waitFor({ timeout: WAIT_MS });
    const retried = await receiveOne(agent, worker);
    await acknowledge(agent, retried.message_id, { result: 'found it' });
    await page.locator('.view-heading').getByText('completed', { exact: true }).waitFor({ timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone: the runs list and a run with its graph stay inside the page', async () => {
    const plan = await workPlan(unique('phone-worker'));
    const run = await startRun(plan.id, { topic: 'a rather long topic to see that nothing overflows the page at all' });
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/runs');
    await page.locator(`tr[data-run="${run.id}"]`).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.locator(`tr[data-run="${run.id}"]`).getByRole('link', { name: run.id }).click();
    await graphNode(page, 'work', 'running').waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
