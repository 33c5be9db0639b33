import type { Page } from 'playwright-core';
import { expect, it } from 'vitest';
import { createArtifact } from '../artifacts/fixtures.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/** What a hostile artifact's script leaves behind when it runs on the console's origin: whatever the tab stores. */
const MARKER = 'hostile-script-ran';
const STEAL = `localStorage.setItem('${MARKER}', JSON.stringify(sessionStorage))`;

/** An SVG that tries, from a script and from an onload handler, to copy the console's session to localStorage. */
const HOSTILE_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="40" height="20" onload="${STEAL.replaceAll("'", '&apos;')}">
  <rect width="40" height="20" fill="teal"/>
  <script>${STEAL}</script>
</svg>`;
const HOSTILE_HTML = `<!doctype html><title>report</title><script>${STEAL}</script><p>report</p>`;

/** Swagger UI parses 1.5 MB of script, then lays out the whole API: 45 s on a busy two-core machine. */
const DOCS_WAIT_MS = 4 * WAIT_MS;

/** What the hostile script left on the console's origin (localStorage is shared by its tabs), or null. */
const marker = (page: Page) => page.evaluate<string | null>(`localStorage.getItem('${MARKER}')`);

describeEachDialect('the console and the docs under their Content-Security-Policy', (dialect) => {
  const server = useServer(dialect);
  // Every page it opens reports any CSP violation as a console error, which fails the test.
  const browser = useBrowser();

  it('serves the console under a policy that allows its own scripts only, and the console works under it', async () => {
    const page = await browser.open();
    const response = await page.goto(`${server.url}/console`);
    const policy = response!.headers()['content-security-policy'] ?? '';
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    await signIn(page, server, '/console');
    await page.getByRole('heading', { name: 'Overview' }).waitFor({ timeout: WAIT_MS });

    // The plan graph (React Flow) and the start-run form, under the policy.
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `csp-${dialect}`,
      steps: [
        { id: 'work', type: 'agent', agent: 'csp-worker', input: { topic: '{{input.topic}}' } },
        { id: 'report', type: 'transform', output: { done: '{{steps.work.output}}' }, depends_on: ['work'] },
      ],
    });
    expect(plan.status, plan.text).toBe(201);
    await page.goto(`${server.url}/console/plans/${plan.body.data.id}`);
    await page.locator('.plan-graph [data-step="report"]').waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Input (a JSON object)').waitFor({ timeout: WAIT_MS });

    // The policy is enforced: a script written into the page is refused.
    browser.expectConsoleErrors(/Content Security Policy|CSP violation: script-src/);
    await page.evaluate(`document.head.append(Object.assign(document.createElement('script'), { textContent: 'window.injected = true' }))`);
    expect(await page.evaluate<boolean>(`'injected' in window`)).toBe(false);
  });

  it('previews an SVG without running its script, and opening the preview in a tab runs none either', async () => {
    const svg = await createArtifact(server.api, { bytes: HOSTILE_SVG, filename: 'chart.svg', fileType: 'image/svg+xml' });
    const page = await browser.open();
    await signIn(page, server, `/console/artifacts/${svg.id}`);
    const image = page.getByRole('img', { name: 'Version 1 of the artifact' });
    await expect
      .poll(() => image.evaluate((img) => (img as { naturalWidth: number }).naturalWidth), { timeout: WAIT_MS })
      .toBeGreaterThan(0);
    expect(await marker(page)).toBeNull();

    // "Open image in new tab": a second tab of the same browser goes to the preview's address.
    const source = await image.evaluate((img) => (img as { src: string }).src);
    const tab = await page.context().newPage();
    await tab.goto(source);
    expect(await marker(page)).toBeNull();
    expect(await tab.evaluate<string>('document.contentType')).toBe('image/png');
  });

  it('previews an HTML artifact as its text, never as a page', async () => {
    const html = await createArtifact(server.api, { bytes: HOSTILE_HTML, filename: 'report.html', fileType: 'text/html' });
    const page = await browser.open();
    await signIn(page, server, `/console/artifacts/${html.id}`);
    await page.getByLabel('Text preview').getByText('<script>', { exact: false }).waitFor({ timeout: WAIT_MS });
    expect(await page.locator('iframe, object, embed').count()).toBe(0);
    expect(await marker(page)).toBeNull();
  });

  it(
    'serves /docs under a policy that allows its own scripts only, and Swagger UI renders under it',
    { timeout: 3 * DOCS_WAIT_MS },
    async () => {
      const page = await browser.open();
      const response = await page.goto(`${server.url}/docs`, { timeout: DOCS_WAIT_MS });
      const policy = response!.headers()['content-security-policy'] ?? '';
      expect(policy).toContain("script-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      await page.getByRole('heading', { name: /Switchboard/ }).waitFor({ timeout: DOCS_WAIT_MS });
      await page.locator('.opblock').first().waitFor({ timeout: DOCS_WAIT_MS });
      expect(await page.locator('.opblock').count()).toBeGreaterThan(10);
    },
  );
});
