import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { createPerson, seriousAxeViolations, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const C = '/api/v1/coordination';

/** Issue 38, item 8: the sign-in, approvals and run views pass axe-core (no serious or critical violation), on a desktop and at 390 px. */
describeEachDialect('the console: accessibility (axe-core)', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();
  let plans = 0;

  async function waitingRun(): Promise<string> {
    const plan = await server.api.post(`${C}/plans`, {
      alias: `a11y-${dialect}-${++plans}`,
      steps: [
        { id: 'build', type: 'transform', output: { artifact: 'app.tgz' } },
        { id: 'gate', type: 'human_approval', prompt: 'Ship it?', depends_on: ['build'], approvers: ['role:approver'] },
      ],
    });
    expect(plan.status, plan.text).toBe(201);
    const run = await server.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: { version: '1.0' } });
    expect(run.status, run.text).toBe(201);
    return run.body.data.id;
  }

  const expectNoSerious = async (page: Page, view: string) => expect(await seriousAxeViolations(page), view).toEqual([]);

  for (const width of [1280, 390]) {
    it(`the sign-in, approvals and run views at ${width} px`, async () => {
      const runId = await waitingRun();
      const approver = await createPerson(server, `a11y-${width}-${dialect}`, 'approver');
      const page = await browser.open({ width, height: 844 });
      await page.goto(`${server.url}/console/approvals`);
      await page.getByLabel('Username').waitFor({ timeout: WAIT_MS });
      await expectNoSerious(page, 'sign-in');
      await page.getByRole('button', { name: 'Use an API key' }).click();
      await page.getByLabel('API key').waitFor();
      await expectNoSerious(page, 'sign-in with a key');

      await signIn(page, server, '/console/approvals', approver);
      await page.locator(`[data-list="mine"] li.approval[data-run="${runId}"]`).waitFor({ timeout: WAIT_MS });
      await expectNoSerious(page, 'approvals');

      await page.goto(`${server.url}/console/runs/${runId}`);
      await page.locator('.react-flow__node').first().waitFor({ timeout: WAIT_MS });
      await expectNoSerious(page, 'run');
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(width);
    });
  }
});
