import type { Locator, Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { receiveOne } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const M = '/api/v1/messaging';

describeEachDialect('the console: an agent and its inbox', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  const send = async (destination: string, event_name: string, max_deliveries = 5) => {
    const res = await server.api.post(`${M}/send`, { destination, event_name, max_deliveries });
    expect(res.status, res.text).toBe(201);
    return res.body.data.message_id as string;
  };
  /** Receives and rejects a message until it is dead-lettered (its max_deliveries is `times`). */
  const rejectUntilDead = async (agent: Api, agentId: string, messageId: string, times: number) => {
    for (let attempt = 1; attempt <= times; attempt++) {
      expect((await receiveOne(agent, agentId)).message_id).toBe(messageId);
      const res = await agent.post(`${M}/reject`, { message_id: messageId, reason: `failure ${attempt}`, delay_seconds: 0 });
      expect(res.body.data.status).toBe(attempt < times ? 'requeued' : 'dead_lettered');
    }
  };
  const list = (page: Page, name: 'pending' | 'leased' | 'dead') => page.locator(`section[data-list="${name}"]`);
  const row = (section: Locator, messageId: string) => section.locator(`tr[data-message="${messageId}"]`);

  it('pages the agents table on the server and opens an agent with its capabilities and groups', async () => {
    const ids = Array.from({ length: 27 }, (_, i) => `pager-agent-${String(i).padStart(2, '0')}`);
    for (const agentId of ids) {
      const res = await server.api.post('/api/v1/discovery/capabilities', {
        agent_id: agentId,
        capability: 'console.paging',
        groups: ['pagers'],
      });
      expect(res.status, res.text).toBe(201);
    }
    const page = await browser.open();
    await signIn(page, server, '/console/agents?capability=console.paging');
    await page.getByText('1–25 of 27 agents').waitFor({ timeout: WAIT_MS });
    await page.getByRole('button', { name: 'Next' }).click();
    await page.getByText('26–27 of 27 agents').waitFor({ timeout: WAIT_MS });
    // The pager's text may change before the second page's rows replace the first's.
    await page.getByRole('link', { name: ids[25]! }).waitFor({ timeout: WAIT_MS });
    expect(await page.locator('tr[data-agent]').count()).toBe(2);
    expect(new URL(page.url()).searchParams.get('page')).toBe('2');

    await page.getByRole('link', { name: ids[26]! }).click();
    await page.getByRole('heading', { name: ids[26]! }).waitFor({ timeout: WAIT_MS });
    await page.getByRole('row', { name: /console\.paging/ }).waitFor({ timeout: WAIT_MS });
    // The agent's facts come with its health, which may answer after the inbox's counts.
    const facts = page.locator('dl[aria-label="About the agent"]');
    await facts.waitFor({ timeout: WAIT_MS });
    expect(await facts.textContent()).toMatch(/Healthunknown.*Groupspagers/);
  });

  it("shows a message pending, then leased with its lease expiry, in the agent's inbox", async () => {
    const worker = await server.agent('inbox-worker');
    const page = await browser.open();
    await signIn(page, server, '/console/agents/inbox-worker');
    await list(page, 'pending').getByText('Nothing waits in this inbox').waitFor({ timeout: WAIT_MS });

    const sent = await send('inbox-worker', 'summarize');
    await page.getByRole('button', { name: 'Refresh inbox' }).click();
    await row(list(page, 'pending'), sent).getByText('summarize').waitFor({ timeout: WAIT_MS });
    expect(await page.getByLabel('Inbox counts').textContent()).toMatch(/Pending1Leased0Dead letters0/);

    const received = await worker.get(`${M}/receive?visibility_timeout=600`);
    expect(received.body.data.messages.map((m: { message_id: string }) => m.message_id)).toEqual([sent]);
    await page.getByRole('button', { name: 'Refresh inbox' }).click();
    const leased = row(list(page, 'leased'), sent);
    await leased.waitFor({ timeout: WAIT_MS });
    // Leased for 600 s: it expires in 9 or 10 minutes, to inbox-worker, on its first delivery.
    expect(await leased.textContent()).toMatch(/in (9|10)m.*1 of 5.*inbox-worker/);
    await list(page, 'pending').getByText('Nothing waits in this inbox').waitFor({ timeout: WAIT_MS });
    expect(await page.getByLabel('Inbox counts').textContent()).toMatch(/Pending0Leased1Dead letters0/);
  });

  it('shows a dead letter with every attempt, redrives it, and sees it pending again', async () => {
    const worker = await server.agent('dead-worker');
    const page = await browser.open();
    await signIn(page, server, '/console/agents/dead-worker');
    const dead = list(page, 'dead');
    await dead.getByText('No dead letters.').waitFor({ timeout: WAIT_MS });

    const sent = await send('dead-worker', 'flaky', 3);
    await rejectUntilDead(worker, 'dead-worker', sent, 3);
    // message.dead_lettered: the list is live.
    const letter = row(dead, sent);
    await letter.waitFor({ timeout: WAIT_MS });
    const attempts = page.getByRole('list', { name: `Attempts of ${sent}` }).getByRole('listitem');
    expect(await attempts.allTextContents()).toEqual([
      expect.stringMatching(/^rejected dead-worker .*failure 1$/),
      expect.stringMatching(/^rejected dead-worker .*failure 2$/),
      expect.stringMatching(/^rejected dead-worker .*failure 3$/),
    ]);
    expect(await letter.textContent()).toContain('failure 3 (after 3 deliveries)');

    await page.getByRole('button', { name: `Redrive ${sent}` }).click();
    await page.getByRole('status').getByText('Redriven: 1.').waitFor({ timeout: WAIT_MS });
    await dead.getByText('No dead letters.').waitFor({ timeout: WAIT_MS });
    const redriven = (await server.api.get(`${M}/inboxes/dead-worker/messages`)).body.data;
    expect(redriven).toEqual([expect.objectContaining({ redriven_from: sent, event_name: 'flaky' })]);
    await row(list(page, 'pending'), redriven[0].message_id).waitFor({ timeout: WAIT_MS });
  });

  it('redrives several selected dead letters at once', async () => {
    const worker = await server.agent('bulk-worker');
    const sent = [];
    for (const name of ['one', 'two', 'three']) {
      const id = await send('bulk-worker', name, 1);
      await rejectUntilDead(worker, 'bulk-worker', id, 1);
      sent.push(id);
    }
    const page = await browser.open();
    await signIn(page, server, '/console/agents/bulk-worker');
    const dead = list(page, 'dead');
    for (const id of sent) await row(dead, id).waitFor({ timeout: WAIT_MS });

    await page.getByLabel(`Select ${sent[0]}`).check();
    await page.getByLabel(`Select ${sent[2]}`).check();
    await page.getByRole('button', { name: 'Redrive selected (2)' }).click();
    await page.getByRole('status').getByText('Redriven: 2.').waitFor({ timeout: WAIT_MS });
    await dead.getByText('Dead letters (1)').waitFor({ timeout: WAIT_MS });
    expect(await dead.locator('tr[data-message]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-message')))).toEqual([
      sent[1],
    ]);
    const pending = (await server.api.get(`${M}/inboxes/bulk-worker/messages`)).body.data.map(
      (m: { redriven_from: string }) => m.redriven_from,
    );
    expect(pending.sort()).toEqual([sent[0], sent[2]].sort());
    await list(page, 'pending').getByText('Pending (2)').waitFor({ timeout: WAIT_MS });

    // Select all, then redrive the last one the same way.
    await page.getByLabel('Select all on this page').check();
    await page.getByRole('button', { name: 'Redrive selected (1)' }).click();
    await dead.getByText('No dead letters.').waitFor({ timeout: WAIT_MS });
  });

  it('fits a 390 px wide phone: the inbox tables scroll inside their own box', async () => {
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, '/console/agents/bulk-worker');
    await list(page, 'pending').locator('tr[data-message]').first().waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
