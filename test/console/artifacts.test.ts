import { expect, it } from 'vitest';
import { createArtifact, sendForm } from '../artifacts/fixtures.js';
import { signIn, useBrowser, WAIT_MS } from '../helpers/browser.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

/** A 1×1 PNG. */
const PIXEL = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

describeEachDialect('the console: artifacts', (dialect) => {
  const server = useServer(dialect);
  const browser = useBrowser();

  it('lists uploaded artifacts, filters them in the URL, and previews text, JSON and an image', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/artifacts');
    await page.getByText('No artifacts yet.').waitFor({ timeout: WAIT_MS });

    const notes = await createArtifact(server.api, { bytes: 'first draft of the notes', filename: 'notes.txt', fileType: 'text/plain' });
    const pixel = await createArtifact(server.api, {
      bytes: PIXEL,
      filename: 'pixel.png',
      fileType: 'image/png',
      metadata: { project: 'alpha' },
    });
    const snippet = await server.api.post('/api/v1/artifacts/snippets', {
      name: 'result.json',
      content: { verdict: 'approved', score: 0.93 },
    });
    expect(snippet.status, snippet.text).toBe(201);

    // Listed live, without a reload.
    for (const name of ['notes.txt', 'pixel.png', 'result.json']) await page.getByRole('link', { name }).waitFor({ timeout: WAIT_MS });
    expect(await page.locator(`tr[data-artifact="${pixel.id}"]`).textContent()).toMatch(/image\/png.*v1/);

    // Filters go into the URL, and a deep link opens the same list.
    await page.getByLabel('Content type').fill('image/*');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.locator('tr[data-artifact]').nth(1).waitFor({ state: 'detached', timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('type')).toBe('image/*');
    expect(await page.locator('tr[data-artifact]').count()).toBe(1);
    const filtered = await browser.open();
    // Typed by hand, the JSON is not quoted as the router writes it: read either way.
    await signIn(filtered, server, '/console/artifacts?metadata=%7B%22project%22%3A%22beta%22%7D');
    await filtered.getByText('No artifact matches these filters.').waitFor({ timeout: WAIT_MS });

    // The image: decoded by the browser from the bytes the SDK fetched.
    await page.getByRole('link', { name: 'pixel.png' }).click();
    await page.getByRole('heading', { name: 'pixel.png' }).waitFor({ timeout: WAIT_MS });
    const image = page.getByRole('img', { name: 'Version 1 of the artifact' });
    await image.waitFor({ timeout: WAIT_MS });
    await expect.poll(() => image.evaluate((img) => (img as { naturalWidth: number }).naturalWidth), { timeout: WAIT_MS }).toBe(1);
    expect(await page.getByLabel('Metadata').textContent()).toContain('alpha');

    // Text, then JSON as a tree.
    await page.goto(`${server.url}/console/artifacts/${notes.id}`);
    await page.getByLabel('Text preview').getByText('first draft of the notes').waitFor({ timeout: WAIT_MS });
    await page.goto(`${server.url}/console/artifacts/${snippet.body.data.id}`);
    const json = page.getByLabel('JSON preview');
    await json.getByText('verdict').waitFor({ timeout: WAIT_MS });
    expect(await json.textContent()).toMatch(/"approved".*0\.93/);
  });

  it('shows a new version live, downloads it, and creates a share link that works without a key', async () => {
    const agent = await server.agent('console-writer');
    const report = await createArtifact(agent, { bytes: 'version one', filename: 'report.txt', fileType: 'text/plain' });
    const page = await browser.open();
    await signIn(page, server, `/console/artifacts/${report.id}`);
    await page.getByLabel('Text preview').getByText('version one').waitFor({ timeout: WAIT_MS });
    expect(await page.locator('tr[data-version]').count()).toBe(1);

    const updated = await sendForm(agent, { id: report.id, bytes: 'version two, longer', filename: 'report.txt', fileType: 'text/plain' });
    expect(updated.status, updated.text).toBe(200);
    await page.locator('tr[data-version="2"]').getByText('current').waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Text preview').getByText('version two, longer').waitFor({ timeout: WAIT_MS });

    // The download goes through the SDK (the key in a header) and is saved under the artifact's name.
    const [download] = await Promise.all([
      page.waitForEvent('download', { timeout: WAIT_MS }),
      page.getByRole('button', { name: 'Download v2' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('report.txt');

    // An older version: shown, and shared.
    await page.locator('tr[data-version="1"]').getByRole('link', { name: 'Show v1' }).click();
    await page.getByLabel('Text preview').getByText('version one').waitFor({ timeout: WAIT_MS });
    expect(new URL(page.url()).searchParams.get('version')).toBe('1');
    await page.getByLabel('Expires in').selectOption({ label: '1 hour' });
    await page.getByRole('button', { name: 'Create link' }).click();
    const link = await page.getByTestId('share-link').inputValue();
    expect(link).not.toContain(server.adminKey);
    const shared = await fetch(link);
    expect(shared.status).toBe(200);
    expect(await shared.text()).toBe('version one');
  });

  it('uploads a file and a new version from the page', async () => {
    const page = await browser.open();
    await signIn(page, server, '/console/artifacts');
    await page.getByRole('heading', { name: 'Artifacts' }).waitFor({ timeout: WAIT_MS });
    const upload = page.getByRole('form', { name: 'Upload an artifact' });
    await upload.getByLabel('File').setInputFiles({ name: 'plan.md', mimeType: 'text/markdown', buffer: Buffer.from('# the plan') });
    await upload.getByLabel('Name').fill('The plan');
    await upload.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('heading', { name: 'The plan' }).waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Text preview').getByText('# the plan').waitFor({ timeout: WAIT_MS });

    const version = page.getByRole('form', { name: 'Upload a new version' });
    await version
      .getByLabel('File')
      .setInputFiles({ name: 'plan.md', mimeType: 'text/markdown', buffer: Buffer.from('# the plan, revised') });
    await version.getByRole('button', { name: 'Upload version' }).click();
    await page.locator('tr[data-version="2"]').waitFor({ timeout: WAIT_MS });
    await page.getByLabel('Text preview').getByText('# the plan, revised').waitFor({ timeout: WAIT_MS });
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const stored = await server.api.get(`/api/v1/artifacts/${id}`);
    expect(stored.body.data).toMatchObject({ name: 'The plan', version: 2, content_type: 'text/markdown' });
  });

  it('says why a large file has no preview, and fits a phone', async () => {
    const big = await createArtifact(server.api, { bytes: 'x'.repeat(1024 * 1024 + 1), filename: 'big.log', fileType: 'text/plain' });
    const page = await browser.open({ width: 390, height: 844 });
    await signIn(page, server, `/console/artifacts/${big.id}`);
    await page.getByText(/over the preview limit of 1 MiB/).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await page.getByRole('link', { name: '← Artifacts' }).click();
    await page.getByRole('link', { name: 'big.log' }).waitFor({ timeout: WAIT_MS });
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
  });
});
