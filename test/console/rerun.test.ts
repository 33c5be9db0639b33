import { expect, it } from 'vitest';
import { acknowledge, receive, receiveOne, reject } from '../helpers/agent.js';
import { seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const PLANS = '/api/v1/coordination/plans';
const RUNS = '/api/v1/coordination/runs';

describeEachDialect('the console: rerunning and replaying runs', (dialect) => {
  // A replay's bound lowered from 10,000, so that three runs cross it.
  const server = useServer(dialect, { env: { SWITCHBOARD_REPLAY_MAX_RUNS: '2' } });
  const browser = useBrowser();
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  /** work (by `worker`, with the run's topic), then a transform of its output. */
  async function workPlan(worker: string) {
    const res = await server.api.post(PLANS, {
      alias: unique('work'),
      steps: [
        { id: 'work', type: 'agent', agent: worker, input: { topic: '{{input.topic}}' } },
        { id: 'report', type: 'transform', output: { done: '{{steps.work.output.result}}' }, depends_on: ['work'] },
      ],
    });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string; alias: string };
  }

  /** A run of `planId` whose work step the agent rejects for good. */
  async function failedRun(agent: Parameters<typeof receiveOne>[0], worker: string, planId: string, topic: string) {
    const res = await server.api.post(RUNS, { plan_id: planId, input: { topic } });
    expect(res.status, res.text).toBe(201);
    const message = await receiveOne(agent, worker);
    expect(message.payload.run_id).toBe(res.body.data.id);
    await reject(agent, message.message_id, `no such topic ${topic}`, false);
    await waitFor(async () => (await server.api.get(`${RUNS}/${res.body.data.id}`)).body.data.status === 'failed', WAIT_MS);
    return res.body.data as { id: string };
  }

  it('reruns a finished run from a step with an edited input, showing a refusal, and opens the new run', async () => {
    const worker = unique('rerun-worker');
    const agent = await server.agent(worker);
    const plan = await workPlan(worker);
    const run = await failedRun(agent, worker, plan.id, 'cats');
    // The plan's latest version has no step work: a rerun following it is refused.
    const v2 = await server.api.put(`${PLANS}/${plan.id}`, { alias: plan.alias, steps: [{ id: 'other', type: 'transform', output: 1 }] });
    expect(v2.status, v2.text).toBe(200);

    const page = await browser.open();
    await signIn(page, server, `/console/runs/${run.id}`);
    await page.locator('.view-heading').getByText('failed', { exact: true }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Rerun from work' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rerun from work' });
    await dialog.waitFor({ timeout: WAIT_MS });
    // Prefilled with what the run had.
    expect(JSON.parse(await dialog.getByLabel('Run input (a JSON object)').inputValue())).toEqual({ topic: 'cats' });
    const stepInput = dialog.getByLabel('Input of work (a JSON object)');
    expect(JSON.parse(await stepInput.inputValue())).toEqual({ topic: 'cats' });
    expect(await seriousAxeViolations(page)).toEqual([]);

    // A JSON mistake is shown before any request; the server's refusal with its message.
    browser.expectConsoleErrors(/status of 400/);
    await stepInput.fill('{ "topic": ');
    await dialog.getByRole('button', { name: 'Rerun', exact: true }).click();
    await dialog
      .getByRole('alert')
      .getByText(/^Input of work: Not JSON/)
      .waitFor({ timeout: WAIT_MS });
    await stepInput.fill('{ "topic": "dogs" }');
    await dialog.getByLabel("The plan's latest").check();
    await dialog.getByRole('button', { name: 'Rerun', exact: true }).click();
    await dialog
      .getByRole('alert')
      .getByText("from_step: plan version 2 has no step 'work'", { exact: true })
      .first()
      .waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).pathname).toBe(`/console/runs/${run.id}`);

    await dialog.getByLabel("This run's (version 1)").check();
    await dialog.getByRole('button', { name: 'Rerun', exact: true }).click();
    await page.waitForURL((url) => url.pathname.startsWith('/console/runs/') && !url.pathname.endsWith(run.id), { timeout: WAIT_MS });
    const rerunId = new URL(page.url()).pathname.split('/').at(-1)!;
    await page.getByRole('heading', { name: `Run ${rerunId}` }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('link', { name: run.id }).waitFor({ timeout: WAIT_MS });

    // The agent gets the edited input; the new run completes, the earlier one stays failed.
    const message = await receiveOne(agent, worker);
    expect(message.payload).toMatchObject({ run_id: rerunId, step_id: 'work', input: { topic: 'dogs' } });
    await acknowledge(agent, message.message_id, { result: 'woof' });
    await page.locator('.view-heading').getByText('completed', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect((await server.api.get(`${RUNS}/${rerunId}`)).body.data).toMatchObject({ rerun_of: run.id, plan_version: 1 });
    expect((await server.api.get(`${RUNS}/${run.id}`)).body.data.status).toBe('failed');

    // A run not finished offers no rerun.
    const running = await server.api.post(RUNS, { plan_id: (await workPlan(worker)).id, input: {} });
    expect(running.status, running.text).toBe(201);
    await page.goto(`${server.url}/console/runs/${running.body.data.id}`);
    await page.locator('.view-heading').getByText('running', { exact: true }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: /^Rerun from/ }).count()).toBe(0);
    const taken = await receiveOne(agent, worker);
    await acknowledge(agent, taken.message_id, { result: 'done' });
  });

  it('replays the filtered runs from their failed step after a dry-run count, saying when more matched than one replay takes', async () => {
    const worker = unique('replay-worker');
    const agent = await server.agent(worker);
    const plan = await workPlan(worker);
    const other = await workPlan(worker);
    const failed = [];
    for (const topic of ['a', 'b', 'c']) failed.push((await failedRun(agent, worker, plan.id, topic)).id);
    await failedRun(agent, worker, other.id, 'elsewhere');

    const page = await browser.open();
    await signIn(page, server, `/console/runs?plan=${plan.alias}&status=failed`);
    await page.locator(`tr[data-run="${failed[0]}"]`).waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Replay…' }).click();
    const panel = page.getByRole('form', { name: 'Replay runs' });
    await panel.getByText(`Runs of plan ${plan.alias}, that failed.`).waitFor({ timeout: WAIT_MS });
    expect(await seriousAxeViolations(page)).toEqual([]);

    // Nothing matches this error: nothing to replay.
    await panel.getByLabel('Error contains (optional)').fill('quota');
    await panel.getByRole('button', { name: 'Count runs to replay' }).click();
    await panel.getByRole('status').getByText('No run to replay.').waitFor({ timeout: WAIT_MS });
    expect(await panel.getByRole('button', { name: /^Replay \d/ }).count()).toBe(0);

    // Three matched; one replay takes two (the bound of this server), and says so.
    await panel.getByLabel('Error contains (optional)').fill('no such topic');
    await panel.getByRole('button', { name: 'Count runs to replay' }).click();
    await panel
      .getByRole('status')
      .getByText(/^2 runs would be replayed\. 3 runs matched, more than one replay takes/)
      .waitFor({ timeout: WAIT_MS });
    expect(await receive(agent, worker, 0)).toEqual([]);
    // The replay's own answer, then the panel's word of it.
    const replayed = page.waitForResponse(
      (res) => res.url().endsWith('/coordination/runs/replay') && !res.request().postData()?.includes('"dry_run":true'),
      { timeout: WAIT_MS },
    );
    await panel.getByRole('button', { name: 'Replay 2 runs' }).click();
    const answer = await replayed;
    expect(answer.status(), await answer.text()).toBe(200);
    await panel
      .getByRole('status')
      .getByText(/^Started 2 runs\./)
      .waitFor({ timeout: WAIT_MS });
    // One panel: the replay panel and the filters once had the same key, and the page showed copies of the panel.
    expect(await panel.count()).toBe(1);

    // From the failed step: the agent gets work again for two of the three runs, and nothing of the other plan.
    const messages = [...(await receive(agent, worker, 5, 10))];
    while (messages.length < 2) messages.push(...(await receive(agent, worker, 5, 10)));
    const rerunOf = await Promise.all(
      messages.map(async (m) => (await server.api.get(`${RUNS}/${m.payload.run_id}`)).body.data.rerun_of as string),
    );
    expect(rerunOf).toHaveLength(2);
    for (const id of rerunOf) expect(failed).toContain(id);
    for (const m of messages) await acknowledge(agent, m.message_id, { result: 'ok' });
  });

  it('offers no replay for filters a replay cannot take', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/runs?status=running');
    await page.getByRole('button', { name: 'Replay…' }).click();
    await page.getByText('Only finished runs are replayed, not running ones.').waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Count runs to replay' }).count()).toBe(0);
    await page.goto(`${server.url}/console/runs?tag=customer:acme`);
    await page.getByRole('button', { name: 'Replay…' }).click();
    await page.getByText(/clear the tag and metadata filters to replay/).waitFor({ timeout: WAIT_MS });
  });
});
