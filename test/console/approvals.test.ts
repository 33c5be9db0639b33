import type { Locator, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { consoleAdmin, createPerson, signIn, useBrowser, WAIT_MS, type CreatedPerson } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const C = '/api/v1/coordination';

/** The approvals inbox and approval links in a browser. */
describeEachDialect('the console: approvals', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let plans = 0;

  /** Starts a run of a new plan of `steps`; its id. */
  async function startRun(steps: unknown[], input: Record<string, unknown> = {}): Promise<string> {
    const plan = await server.api.post(`${C}/plans`, { alias: `console-approvals-${dialect}-${++plans}`, steps });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input });
    expect(run.status, run.text).toBe(201);
    expect(run.body.data.status).toBe('waiting');
    return run.body.data.id;
  }

  const runOf = async (runId: string) => (await server.api.get(`${C}/runs/${runId}`)).body.data;

  /** The approve_url of a run's human step, as its `approval.requested` / `input.requested` event carries it. */
  async function eventUrl(runId: string, type: 'approval.requested' | 'input.requested'): Promise<string> {
    const events = (await server.api.get(`/api/v1/events?type=${type}&subject=${runId}`)).body.data;
    const url = events.at(-1)?.data.approve_url as string;
    expect(url).toMatch(/\/console\/approve\/[\w-]+\.[\w-]+$/);
    return url;
  }

  let people = 0;
  const person = (role = 'approver') => createPerson(server, `approvals-person-${dialect}-${++people}`, role);

  /** The approve_url of a link made (by the admin key) that decides a run's waiting step as `who`. */
  async function personUrl(runId: string, stepId: string, who: CreatedPerson): Promise<string> {
    const made = await server.api.post(`${C}/runs/${runId}/steps/${stepId}/links`, { approver: `user:${who.username}` });
    expect(made.status, made.text).toBe(201);
    return made.body.data.approve_url;
  }

  const card = (page: Page, runId: string) => page.locator(`li.approval[data-run="${runId}"]`);

  /** The problems rjsf shows under a field (its `<id>__error` list, which the input names in aria-describedby). */
  async function fieldErrors(field: Locator): Promise<string> {
    const id = await field.getAttribute('id');
    return (await field.page().locator(`[id="${id}__error"]`).textContent({ timeout: WAIT_MS })) ?? '';
  }

  it('lists a waiting approval live with its prompt and context, approves it with a comment, and the run completes', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/approvals');
    // Before any: the empty state says what to do next.
    await page.getByText('Nothing waits for a person.').waitFor({ timeout: WAIT_MS });

    const runId = await startRun(
      [
        { id: 'build', type: 'transform', output: { artifact: 'app-{{input.version}}.tgz' } },
        { id: 'gate', type: 'human_approval', prompt: 'Ship {{input.version}}?', depends_on: ['build'] },
        { id: 'announce', type: 'transform', output: { shipped: true }, depends_on: ['gate'] },
      ],
      { version: '2.0' },
    );
    const waiting = card(page, runId);
    await waiting.getByText('Ship 2.0?').waitFor({ timeout: WAIT_MS });
    await waiting.getByText("Context: the run's input and earlier step outputs").click();
    await waiting.getByLabel('Run input').getByText('"2.0"').waitFor({ timeout: WAIT_MS });
    await waiting.getByLabel('Output of build').getByText('"app-2.0.tgz"').waitFor({ timeout: WAIT_MS });

    await waiting.getByLabel('Comment').fill('looks good');
    await waiting.getByRole('button', { name: 'Approve' }).click();
    await page
      .getByRole('status')
      .getByText(/^Approved: step gate of run/)
      .waitFor({ timeout: WAIT_MS });
    await waiting.waitFor({ state: 'detached', timeout: WAIT_MS });
    const run = await runOf(runId);
    expect(run.status).toBe('completed');
    expect(run.steps.find((step: { id: string }) => step.id === 'gate').output).toMatchObject({
      approved: true,
      comment: 'looks good',
      decided_by: (await consoleAdmin(server)).id,
    });
  });

  it("takes a human_input step's data through its schema form, showing the server's problems at their fields", async () => {
    const runId = await startRun([
      {
        id: 'ask',
        type: 'human_input',
        prompt: 'Which release, on how many replicas?',
        schema: {
          type: 'object',
          required: ['version', 'replicas'],
          properties: {
            version: { type: 'string', title: 'Version', pattern: '^\\d+\\.\\d+$' },
            replicas: { type: 'integer', title: 'Replicas', minimum: 1 },
          },
        },
      },
    ]);
    const page = await browser.open();
    browser.expectConsoleErrors(/status of 400/);
    await signIn(page, server, '/console/approvals');
    const asking = card(page, runId);
    await asking.getByText('Which release, on how many replicas?').waitFor({ timeout: WAIT_MS });
    const version = asking.getByLabel('Version');
    const replicas = asking.getByLabel('Replicas');
    await version.fill('two');
    await asking.getByRole('button', { name: 'Submit' }).click();
    // The server's answer, at each field: a pattern the value misses, a value left out.
    expect(await fieldErrors(version)).toMatch(/must match pattern/);
    expect(await fieldErrors(replicas)).toBe('is required');
    await asking.getByRole('alert').getByText('data does not match the step schema').waitFor();
    expect((await runOf(runId)).status).toBe('waiting');

    await version.fill('2.1');
    await replicas.fill('3');
    await asking.getByRole('button', { name: 'Submit' }).click();
    await asking.waitFor({ state: 'detached', timeout: WAIT_MS });
    const run = await runOf(runId);
    expect(run.status).toBe('completed');
    expect(run.output).toEqual({ ask: { version: '2.1', replicas: 3 } });
  });

  it('opens a link made for a person without signing in, decides as that person through its button, and says "already decided" when reopened', async () => {
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Deploy {{input.service}}?' }], { service: 'billing' });
    const alice = await person();
    const url = await personUrl(runId, 'gate', alice);
    const page = await browser.open();
    browser.expectConsoleErrors(/status of (401|409)/);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Approval requested' }).waitFor({ timeout: WAIT_MS });
    await page.getByText('Deploy billing?').waitFor();
    await page.getByText(`This link decides as ${alice.username}.`, { exact: false }).waitFor();
    await page.getByLabel('Run input').getByText('"billing"').waitFor();
    expect(await page.getByLabel('Password').count()).toBe(0);
    // Opening the link decided nothing (a mail scanner's prefetch must not).
    expect((await runOf(runId)).status).toBe('waiting');

    await page.getByLabel('Comment').fill('go ahead');
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByRole('status').getByText('Approved').waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('status').textContent()).toContain(`as ${alice.username} at`);
    const run = await runOf(runId);
    expect(run.status).toBe('completed');
    expect(run.steps[0].output).toMatchObject({ approved: true, comment: 'go ahead', decided_by: alice.id, decided_by_kind: 'user' });

    await page.reload();
    await page.getByRole('heading', { name: 'Already decided' }).waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('status').textContent()).toContain(`Already decided by ${alice.id} at`);
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  });

  it("shows the event's link without a form, and sends the person to sign in and decide in the console", async () => {
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Release {{input.service}}?' }], { service: 'search' });
    const page = await browser.open();
    await page.goto(await eventUrl(runId, 'approval.requested'));
    await page.getByRole('heading', { name: 'Approval requested' }).waitFor({ timeout: WAIT_MS });
    await page.getByText('Release search?').waitFor();
    await page.getByText('decides nothing by itself', { exact: false }).waitFor();
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Decide in the console' }).click();
    await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
    const admin = await consoleAdmin(server);
    await page.getByLabel('Username').fill(admin.username);
    await page.getByLabel('Password').fill(admin.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await card(page, runId).getByRole('button', { name: 'Approve' }).click({ timeout: WAIT_MS });
    await expect.poll(async () => (await runOf(runId)).status, { timeout: WAIT_MS }).toBe('completed');
  });

  it("says so rather than deciding when the browser is signed in as someone other than the link's person", async () => {
    const runId = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Rotate keys?' }]);
    const [alice, bob] = [await person(), await person()];
    const page = await browser.open();
    await signIn(page, server, '/console/approvals', bob);
    await card(page, runId).waitFor({ timeout: WAIT_MS });
    await page.goto(await personUrl(runId, 'gate', alice));
    await page
      .getByText(`You are signed in as ${bob.username}, but this link decides as ${alice.username}`, { exact: false })
      .waitFor({ timeout: WAIT_MS });
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect((await runOf(runId)).status).toBe('waiting');
  });

  it("takes a human_input answer through a person's link form, and says so for a cancelled run's link and a forged one", async () => {
    const asking = await startRun([
      {
        id: 'ask',
        type: 'human_input',
        prompt: 'Reason?',
        schema: { type: 'object', required: ['reason'], properties: { reason: { type: 'string', title: 'Reason', minLength: 3 } } },
      },
    ]);
    const alice = await person();
    const page = await browser.open();
    browser.expectConsoleErrors(/status of (400|401|404|409)/);
    await page.goto(await personUrl(asking, 'ask', alice));
    await page.getByRole('heading', { name: 'Input requested' }).waitFor({ timeout: WAIT_MS });
    const reason = page.getByLabel('Reason');
    await reason.fill('no');
    await page.getByRole('button', { name: 'Submit' }).click();
    expect(await fieldErrors(reason)).toMatch(/must NOT have fewer than 3 characters/);
    await reason.fill('quarterly release');
    await page.getByRole('button', { name: 'Submit' }).click();
    await page.getByRole('status').getByText('Submitted').waitFor({ timeout: WAIT_MS });
    expect((await runOf(asking)).output).toEqual({ ask: { reason: 'quarterly release' } });

    const cancelled = await startRun([{ id: 'gate', type: 'human_approval', prompt: 'Never mind?' }]);
    const cancelledUrl = await personUrl(cancelled, 'gate', alice);
    expect((await server.api.post(`${C}/runs/${cancelled}/cancel`)).status).toBe(200);
    await page.goto(cancelledUrl);
    await page.getByRole('heading', { name: 'The run was cancelled' }).waitFor({ timeout: WAIT_MS });
    await page.getByText(/^Run '\w+' was cancelled: cancelled by admin/).waitFor();

    const [payload, signature] = cancelledUrl.slice(cancelledUrl.lastIndexOf('/') + 1).split('.') as [string, string];
    await page.goto(`${server.url}/console/approve/${payload}.${signature.slice(1)}A`);
    await page.getByRole('heading', { name: 'Approval link not found' }).waitFor({ timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone: a waiting step and its form stay inside the page', async () => {
    const runId = await startRun(
      [{ id: 'gate', type: 'human_approval', prompt: 'A long prompt that has to wrap on a phone screen: '.repeat(4) }],
      { nested: { deeply: { with: ['a', 'list', 'of', 'values', 'that', 'is', 'rather', 'long', 'for', 'a', 'phone'] } } },
    );
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/approvals');
    const waiting = card(page, runId);
    await waiting.getByRole('button', { name: 'Approve' }).waitFor({ timeout: WAIT_MS });
    await waiting.getByText("Context: the run's input and earlier step outputs").click();
    await waiting.getByLabel('Run input').waitFor();
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
