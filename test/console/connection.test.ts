import { expect, it } from 'vitest';
import { createPerson, signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

/** Honest connection state (issue 38, item 6): "Live" only while the event stream is open, and views that failed during an outage recover. */
describeEachDialect('the console: connection state', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it('says "Reconnecting…" while the server is unreachable, and the view loaded meanwhile recovers by itself', async () => {
    // Refused connections and failed loads while the server is away are what this test is about.
    browser.expectConsoleErrors(/ERR_|Failed to fetch|Failed to load resource/);
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(server.url).port));
    try {
      const person = await createPerson(server, `outage-${dialect}`, 'operator');
      const page = await browser.open();
      await signIn(page, server, `http://127.0.0.1:${proxy.port}/console/agents`, person);
      const live = page.getByTestId('live-status');
      await page.locator('[data-live="live"]').waitFor({ timeout: WAIT_MS });

      await proxy.cut();
      await page.locator('[data-live="reconnecting"]').waitFor({ timeout: WAIT_MS });
      expect(await live.textContent()).toBe('Reconnecting…');
      // A view opened during the outage fails to load…
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Plans' }).click();
      await page.getByRole('alert').getByText('Failed to fetch').waitFor({ timeout: WAIT_MS });
      const plan = await server.api.post('/api/v1/coordination/plans', {
        alias: `after-the-outage-${dialect}`,
        steps: [{ id: 'a', type: 'transform', output: {} }],
      });
      expect(plan.status, plan.text).toBe(201);

      // …and loads by itself once the server is back, with what changed meanwhile.
      await proxy.restore();
      await page.locator('[data-live="live"]').waitFor({ timeout: 2 * WAIT_MS });
      await page.getByText(`after-the-outage-${dialect}`).waitFor({ timeout: WAIT_MS });
      expect(await page.getByRole('alert').count()).toBe(0);
    } finally {
      await proxy.close();
    }
  });
});
