import { expect, it } from 'vitest';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('the console on a 390 px screen', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it('keeps a wide table’s key column in view while the rest scrolls sideways', async () => {
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `narrow-${dialect}`,
      steps: [{ id: 'a', type: 'transform', output: {} }],
    });
    const trigger = (
      await server.api.post('/api/v1/coordination/triggers', {
        plan_id: plan.body.data.id,
        type: 'schedule',
        config: { cron: '0 3 * * *' },
      })
    ).body.data;
    const page = await browser.open();
    await page.setViewportSize({ width: 390, height: 800 });
    await signIn(page, server, '/console/triggers');
    const key = page.locator(`tr[data-trigger="${trigger.id}"] th`);
    await key.waitFor({ timeout: WAIT_MS });
    const scroller = page.locator('.table-scroll');
    const scrolled = await scroller.evaluate((element) => {
      element.scrollLeft = element.scrollWidth;
      return { left: element.scrollLeft, box: element.getBoundingClientRect().left };
    });
    // The table is wider than the screen, so it did scroll…
    expect(scrolled.left).toBeGreaterThan(100);
    // …and the key column stayed at the scroller's left edge, in view.
    const box = (await key.boundingBox())!;
    expect(Math.abs(box.x - scrolled.box)).toBeLessThanOrEqual(2);
    expect(box.x + box.width).toBeLessThanOrEqual(390);
  });
});
