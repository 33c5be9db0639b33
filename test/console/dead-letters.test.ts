import { expect, it } from 'vitest';
import { receiveOne } from '../helpers/agent.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describeEachDialect('the console: dead letters', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it("lists every agent's dead letters; a plan step's is redriven with its run, any other as a new message", async () => {
    const worker = `dl-worker-${dialect}`;
    const agent = await server.agent(worker);
    const plan = (
      await server.api.post('/api/v1/coordination/plans', { alias: `dl-${dialect}`, steps: [{ id: 'job', type: 'agent', agent: worker }] })
    ).body.data;
    const run = (await server.api.post('/api/v1/coordination/runs', { plan_id: plan.id, input: {} })).body.data;
    const stepLetter = await receiveOne(agent, worker);
    expect(
      (await agent.post('/api/v1/messaging/reject', { message_id: stepLetter.message_id, reason: 'cannot do it', requeue: false })).status,
    ).toBe(200);
    await waitFor(async () => (await server.api.get(`/api/v1/coordination/runs/${run.id}`)).body.data.status === 'failed' || null);

    const other = `dl-other-${dialect}`;
    const inbox = await server.agent(other);
    expect((await server.api.post('/api/v1/messaging/send', { destination: other, event_name: 'plain', payload: {} })).status).toBe(201);
    const plain = await receiveOne(inbox, other);
    expect(
      (await inbox.post('/api/v1/messaging/reject', { message_id: plain.message_id, reason: 'malformed', requeue: false })).status,
    ).toBe(200);

    const page = await browser.open();
    await signIn(page, server, '/console');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dead letters' }).click();
    const stepRow = page.locator(`tr[data-letter="${stepLetter.message_id}"]`);
    await stepRow.getByText('cannot do it').waitFor({ timeout: WAIT_MS });
    expect(await stepRow.textContent()).toContain(`step job of ${run.id}`);
    await stepRow.getByRole('link', { name: run.id }).waitFor();
    const plainRow = page.locator(`tr[data-letter="${plain.message_id}"]`);
    await plainRow.getByText('malformed').waitFor({ timeout: WAIT_MS });
    expect(await plainRow.getByRole('button', { name: 'Redrive the run' }).count()).toBe(0);

    await stepRow.getByRole('button', { name: 'Redrive the run' }).click();
    await waitFor(
      async () => (await server.api.get(`/api/v1/coordination/runs/${run.id}`)).body.data.status === 'running' || null,
      WAIT_MS,
    );
    expect((await receiveOne(agent, worker)).payload.step_id).toBe('job');

    await plainRow.getByRole('button', { name: 'Redrive', exact: true }).click();
    const again = await receiveOne(inbox, other);
    expect(again).toMatchObject({ event_name: 'plain', redriven_from: plain.message_id });
  });
});
