import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { receiveOne, reportUsage } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const B = '/api/v1/budgets';
const RUNS = '/api/v1/coordination/runs';

/** Plans, capabilities and every agent paused by budgets: flagged where they appear, resumed from there. */
describeEachDialect('the console: what budgets pause', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;
  const expectNoSerious = async (page: Page, view: string) => expect(await seriousAxeViolations(page), view).toEqual([]);

  async function budget(body: Record<string, unknown>) {
    const res = await server.api.post(B, { period: 'day', limits: { cost_usd: 1 }, action: 'pause', ...body });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; name: string };
  }
  const state = async (id: string) => (await server.api.get(`${B}/${id}`)).body.data.state as string;

  /** An agent offering `capability`, heard from, and a plan with one step for that capability. */
  async function setUp() {
    const capability = unique('cap');
    const agentId = unique('worker');
    const agent = await server.agent(agentId);
    expect((await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability })).status).toBe(201);
    await agent.post('/api/v1/discovery/heartbeat', { agent_id: agentId });
    const alias = unique('plan');
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias,
      steps: [{ id: 'work', type: 'agent', capability, input: {}, timeout_seconds: 600 }],
    });
    expect(plan.status, plan.text).toBe(201);
    return { capability, agentId, agent, alias, planId: plan.body.data.id as string };
  }

  async function start(planId: string) {
    const res = await server.api.post(RUNS, { plan_id: planId, input: {} });
    expect(res.status, res.text).toBe(201);
    return res.body.data.id as string;
  }

  /** A run of the plan whose step reports `cost`: its plan, capability and agent count it. */
  async function spendInRun(agent: Api, agentId: string, planId: string, cost: number) {
    const runId = await start(planId);
    await receiveOne(agent, agentId);
    await reportUsage(agent, agentId, cost, { run_id: runId, step_id: 'work' });
  }

  it('flags a paused plan on the plans list, its page and its waiting runs, links its budget, and resumes it', async () => {
    const { agentId, agent, alias, planId } = await setUp();
    const b = await budget({ name: unique('plan cap'), plan_id: planId });
    await spendInRun(agent, agentId, planId, 2);
    expect(await state(b.id)).toBe('paused');
    const waiting = await start(planId);

    const page = await browser.open();
    await signIn(page, server, '/console/plans');
    const row = page.locator(`tr[data-plan="${alias}"]`);
    await row.getByText('paused by budget').waitFor({ timeout: WAIT_MS });
    expect(await row.getByRole('link', { name: b.name }).getAttribute('href')).toBe(`/console/settings/budgets#${b.id}`);
    await expectNoSerious(page, 'plans');

    // The run whose step waits says why, with the plan's pause.
    await page.goto(`${server.url}/console/runs/${waiting}`);
    const step = page.locator('li[data-step="work"]');
    await step.getByText('a budget paused its plan, its capability or its agents').waitFor({ timeout: WAIT_MS });
    await step.locator(`[data-paused-by="${b.id}"]`).first().waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'run');

    await page.goto(`${server.url}/console/plans/${planId}`);
    await page.getByRole('heading', { name: alias, exact: true }).waitFor({ timeout: WAIT_MS });
    const flag = page.locator(`[data-paused-by="${b.id}"]`);
    await flag.getByText('paused by budget').waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'plan');
    await flag.getByRole('button', { name: 'Resume plan' }).click();
    await flag.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(await state(b.id)).not.toBe('paused');
  });

  it('flags a paused capability on the agents list and on the page of an agent offering it (not the agent), and resumes it', async () => {
    const { capability, agentId, agent, planId } = await setUp();
    const b = await budget({ name: unique('capability cap'), capability });
    await spendInRun(agent, agentId, planId, 2);
    expect(await state(b.id)).toBe('paused');

    const page = await browser.open();
    await signIn(page, server, `/console/agents?capability=${capability}`);
    const row = page.locator(`tr[data-agent="${agentId}"]`);
    await row.locator('.chips li', { hasText: capability }).getByText('paused by budget').waitFor({ timeout: WAIT_MS });
    // The agent itself is not paused: its inbox delivers.
    expect(await row.getByText('paused', { exact: true }).count()).toBe(0);
    await expectNoSerious(page, 'agents');

    await row.getByRole('link', { name: agentId }).click();
    await page.getByRole('heading', { name: agentId, exact: true }).waitFor({ timeout: WAIT_MS });
    const flag = page.getByRole('row', { name: new RegExp(capability) }).locator(`[data-paused-by="${b.id}"]`);
    await flag.getByRole('link', { name: b.name }).waitFor({ timeout: WAIT_MS });
    await expectNoSerious(page, 'agent');
    await flag.getByRole('button', { name: 'Resume capability' }).click();
    await flag.waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(await state(b.id)).not.toBe('paused');
  });

  it('shows a global pause across the console, every agent paused, and resumes it from the banner', async () => {
    const { agentId, agent } = await setUp();
    const b = await budget({ name: unique('everything cap'), limits: { tokens: 1 } });
    try {
      await reportUsage(agent, agentId, 0);
      expect(await state(b.id)).toBe('paused');

      const page = await browser.open();
      await signIn(page, server, '/console/');
      const banner = page.getByTestId('global-pause');
      await banner.getByText('Every agent is paused by budget').waitFor({ timeout: WAIT_MS });
      expect(await banner.getByRole('link', { name: b.name }).getAttribute('href')).toBe(`/console/settings/budgets#${b.id}`);
      await expectNoSerious(page, 'overview');

      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
      await page.locator(`tr[data-agent="${agentId}"]`).getByText('paused', { exact: true }).waitFor({ timeout: WAIT_MS });
      await banner.waitFor({ timeout: WAIT_MS });
      await page.goto(`${server.url}/console/agents/${agentId}`);
      await page.getByRole('heading', { name: `${agentId} paused` }).waitFor({ timeout: WAIT_MS });
      await expectNoSerious(page, 'agent');

      await banner.getByRole('button', { name: 'Resume every agent' }).click();
      await banner.waitFor({ state: 'detached', timeout: WAIT_MS });
      await page.getByRole('heading', { name: agentId, exact: true }).waitFor({ timeout: WAIT_MS });
      expect(await state(b.id)).not.toBe('paused');
    } finally {
      await server.api.delete(`${B}/${b.id}`);
    }
  });

  it('shows a user without budgets:admin a paused plan, the step whose capability is paused, and every agent paused, without budget links or Resume', async () => {
    const { capability, agentId, agent, alias, planId } = await setUp();
    const planBudget = await budget({ name: unique('plan cap'), plan_id: planId });
    const capabilityBudget = await budget({ name: unique('capability cap'), capability });
    await spendInRun(agent, agentId, planId, 2);
    expect([await state(planBudget.id), await state(capabilityBudget.id)]).toEqual(['paused', 'paused']);
    const key = await server.api.post('/api/v1/auth/keys', { name: unique('viewer'), role: 'viewer' });
    expect(key.status, key.text).toBe(201);

    const page = await browser.open();
    await signIn(page, server, '/console/plans', key.body.data.key as string);
    const row = page.locator(`tr[data-plan="${alias}"]`);
    await row.getByText('paused by budget').waitFor({ timeout: WAIT_MS });
    expect(await row.getByRole('link', { name: planBudget.name }).count()).toBe(0);
    await expectNoSerious(page, 'plans');

    await page.goto(`${server.url}/console/plans/${planId}`);
    await page.getByRole('heading', { name: alias, exact: true }).waitFor({ timeout: WAIT_MS });
    await page.locator(`[data-paused-by="${planBudget.id}"]`).getByText('paused by budget').waitFor({ timeout: WAIT_MS });
    const step = page.locator('tr[data-step="work"]');
    await step
      .locator(`[data-paused-by="${capabilityBudget.id}"]`)
      .getByText(`capability ${capability} paused`)
      .waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: /^Resume/ }).count()).toBe(0);
    await expectNoSerious(page, 'plan');

    const global = await budget({ name: unique('everything cap'), limits: { tokens: 1 } });
    try {
      await reportUsage(agent, agentId, 0);
      expect(await state(global.id)).toBe('paused');
      await page.reload();
      const banner = page.getByTestId('global-pause');
      await banner.getByText('Every agent is paused by budget').waitFor({ timeout: WAIT_MS });
      expect(await banner.getByRole('link').count()).toBe(0);
      expect(await banner.getByRole('button').count()).toBe(0);
      await expectNoSerious(page, 'plan, every agent paused');
    } finally {
      await server.api.delete(`${B}/${global.id}`);
    }
  });
});
