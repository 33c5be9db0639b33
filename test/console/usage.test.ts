import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { receiveOne } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const RUNS = '/api/v1/coordination/runs';

describeEachDialect('the console: usage, budgets, run cost, checkpoints and logs', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;
  const expectNoSerious = async (page: Page, view: string) => expect(await seriousAxeViolations(page), view).toEqual([]);

  async function spend(agent: Api, agentId: string, model: string, cost: number) {
    const res = await agent.post('/api/v1/usage', { agent_id: agentId, model, input_tokens: 100, output_tokens: 20, cost_usd: cost });
    expect(res.status, res.text).toBe(201);
  }

  it('charts the cost per day and totals it by agent and by model', async () => {
    const agentId = unique('spender');
    const agent = await server.agent(agentId);
    await spend(agent, agentId, 'model-big', 1.5);
    await spend(agent, agentId, 'model-small', 0.25);

    const page = await browser.open();
    await signIn(page, server, '/console/usage');
    const row = page.locator(`tr[data-usage="${agentId}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    expect(await row.textContent()).toContain('$1.75');
    const today = new Date().toISOString().slice(5, 10);
    const chart = page.getByRole('img', { name: 'Cost per day over the last 7 days' });
    expect(await chart.locator('g[data-bar]').count()).toBe(7);
    expect(await chart.locator(`g[data-bar="${today}"] title`).textContent()).toBe(`${today}: $1.75`);
    await expectNoSerious(page, 'usage');

    await page.getByLabel('Group by').selectOption('model');
    await page.locator('tr[data-usage="model-big"]').waitFor({ timeout: WAIT_MS });
    expect(await page.locator('tr[data-usage="model-small"]').textContent()).toContain('$0.2500');
    expect(page.url()).toContain('group=model');
  });

  it('creates a budget that pauses an agent, flags the agent as paused, and resumes it', async () => {
    const agentId = unique('runaway');
    const agent = await server.agent(agentId);
    await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability: unique('cap') });
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });

    const page = await browser.open();
    await signIn(page, server, '/console/settings/budgets');
    await page.getByText('No budgets yet.').waitFor({ timeout: WAIT_MS });
    const form = page.getByRole('form', { name: 'New budget' });
    // Any scope's budget can pause: a capability's, a plan's, everything's.
    await form.getByLabel('Scope').selectOption('capability');
    expect(await form.getByLabel('On crossing').locator('option').allTextContents()).toEqual(['pause', 'warn']);
    await form.getByLabel('Scope').selectOption('agent');
    expect(await form.getByLabel('On crossing').inputValue()).toBe('pause');
    await form.getByLabel('Name').fill('runaway cap');
    await form.getByLabel('Agent id').fill(agentId);
    await form.getByLabel('Period').selectOption('day');
    await form.getByLabel('Cost limit (USD)').fill('1');
    await form.getByRole('button', { name: 'Create budget' }).click();
    const budget = await waitFor(async () => ((await server.api.get('/api/v1/budgets')).body.data as { id: string }[])[0], WAIT_MS);
    const row = page.locator(`tr[data-budget="${budget.id}"]`);
    await row.getByText('$0.0000 of $1.00 cost').waitFor({ timeout: WAIT_MS });
    await row.getByText('ok', { exact: true }).waitFor({ timeout: WAIT_MS });

    await spend(agent, agentId, 'model-a', 1.5);
    await row.getByText('paused', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect(await row.getByRole('meter', { name: 'cost spent' }).getAttribute('aria-valuenow')).toBe('1.5');
    await expectNoSerious(page, 'budgets');

    // Flagged in the agents list and on its page.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
    const agentRow = page.locator(`tr[data-agent="${agentId}"]`);
    await agentRow.getByText('paused', { exact: true }).waitFor({ timeout: WAIT_MS });
    await agentRow.getByRole('link', { name: agentId }).click();
    await page.getByRole('heading', { name: `${agentId} paused` }).waitFor({ timeout: WAIT_MS });

    // Its inbox holds what is sent to it: flagged among the deepest inboxes on the overview.
    const sent = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    expect(sent.status, sent.text).toBe(201);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Overview' }).click();
    await page
      .getByRole('list', { name: 'Deepest inboxes' })
      .getByRole('listitem')
      .filter({ hasText: agentId })
      .getByText('paused', { exact: true })
      .waitFor({ timeout: WAIT_MS });

    // Resumed from the budgets page: the badge goes.
    await page.goto(`${server.url}/console/settings/budgets`);
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByRole('button', { name: 'Resume' }).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect((await server.api.get(`/api/v1/budgets/${budget.id}`)).body.data.state).not.toBe('paused');
    await page.goto(`${server.url}/console/agents/${agentId}`);
    await page.getByRole('heading', { name: agentId, exact: true }).waitFor({ timeout: WAIT_MS });

    // Edited, then deleted.
    await page.goto(`${server.url}/console/settings/budgets`);
    await row.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit budget runaway cap' });
    await edit.getByLabel('Cost limit (USD)').fill('5');
    await edit.getByRole('button', { name: 'Save budget' }).click();
    await row.getByText('$1.50 of $5.00 cost').waitFor({ timeout: WAIT_MS });
    await row.getByRole('button', { name: 'Delete' }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByText('No budgets yet.').waitFor({ timeout: WAIT_MS });
  });

  it("shows a run's cost, its step's latest checkpoint, and the step's log lines as they come", async () => {
    const worker = unique('worker');
    const agent = await server.agent(worker);
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: unique('plan'),
      steps: [{ id: 'work', type: 'agent', agent: worker, input: {} }],
    });
    expect(plan.status, plan.text).toBe(201);
    const started = await server.api.post(RUNS, { plan_id: plan.body.data.id, input: {} });
    expect(started.status, started.text).toBe(201);
    const runId = started.body.data.id as string;
    const message = await receiveOne(agent, worker);
    const step = `${RUNS}/${runId}/steps/work`;
    expect((await agent.post(`${step}/checkpoint`, { state: { pages_done: 7 } })).status).toBe(200);
    expect((await agent.post(`${step}/logs`, { message: 'reading page 7' })).status).toBe(201);

    const page = await browser.open();
    await signIn(page, server, `/console/runs/${runId}`);
    const checkpoint = page.getByTestId('checkpoint-work');
    await checkpoint.waitFor({ timeout: WAIT_MS });
    expect(await checkpoint.locator('summary').textContent()).toContain('in attempt 1');
    await checkpoint.locator('summary').click();
    await checkpoint.getByText('pages_done').waitFor({ timeout: WAIT_MS });
    const log = page.getByRole('list', { name: 'Log of work' });
    await log.getByText('reading page 7').waitFor({ timeout: WAIT_MS });
    await expect(page.getByText('none recorded').count()).resolves.toBe(1);

    // A new line arrives live (its run.step.log event), with no reload.
    expect((await agent.post(`${step}/logs`, { message: 'page 8 failed to parse', level: 'warn' })).status).toBe(201);
    await log.getByText('page 8 failed to parse').waitFor({ timeout: WAIT_MS });

    const ack = await agent.post('/api/v1/messaging/acknowledge', {
      message_id: message.message_id,
      output: { ok: true },
      usage: { model: 'model-a', input_tokens: 1200, output_tokens: 300, cost_usd: 0.42 },
    });
    expect(ack.status, ack.text).toBe(200);
    const cost = page.locator('.facts').getByTestId('cost');
    await cost.waitFor({ timeout: WAIT_MS });
    expect(await cost.textContent()).toContain('$0.4200 · 1,200 in / 300 out · 1 call');
  });
});
