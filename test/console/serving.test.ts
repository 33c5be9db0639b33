import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

// A stand-in build, so this file needs no `npm run build`: what matters is how the server serves one.
const build = mkdtempSync(path.join(tmpdir(), 'switchboard-console-'));
mkdirSync(path.join(build, 'assets'));
writeFileSync(
  path.join(build, 'index.html'),
  '<!doctype html><div id="root"></div><script type="module" src="/console/assets/index-AbC123.js"></script>',
);
writeFileSync(path.join(build, 'assets', 'index-AbC123.js'), 'console.log("console")');
afterAll(() => rmSync(build, { recursive: true, force: true }));

const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

describeEachDialect('the console, served at /console', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_CONSOLE_DIR: build } });

  it('serves index.html for /console and every deep link under it, revalidated each time, without credentials', async () => {
    for (const path of ['/console', '/console/', '/console/agents?page=2', '/console/settings/keys']) {
      const page = await server.api.get(path, { key: null, headers: HTML });
      expect(page.status, path).toBe(200);
      expect(page.headers.get('content-type'), path).toContain('text/html');
      expect(page.headers.get('cache-control'), path).toBe('no-cache');
      expect(page.text, path).toContain('<div id="root">');
    }
  });

  it('serves hashed assets with a long immutable cache lifetime; a missing asset is a 404 in the envelope', async () => {
    const script = await server.api.get('/console/assets/index-AbC123.js', { key: null });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const gone = await server.api.get('/console/assets/index-Old999.js', { key: null });
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ error: { code: 'not_found' }, meta: { request_id: expect.stringMatching(/^req_/) } });
  });

  it('sends a browser from / to /console; an API client gets 401 without credentials, 404 with them', async () => {
    for (const path of ['/', '/?from=bookmark']) {
      const res = await fetch(server.url + path, { redirect: 'manual', headers: HTML });
      expect(res.status, path).toBe(302);
      expect(res.headers.get('location')).toBe('/console');
    }
    const anonymous = await server.api.get('/', { key: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ error: { code: 'unauthorized' }, meta: { request_id: expect.stringMatching(/^req_/) } });
    const authenticated = await server.api.get('/');
    expect(authenticated.status).toBe(404);
    expect(authenticated.body.error.message).toContain('/api/v1/openapi.json');
  });
});

describeEachDialect('the console without a build', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_CONSOLE_DIR: path.join(build, 'missing') } });

  it('answers 404 in the envelope, saying how to build it; the API is unaffected', async () => {
    for (const path of ['/console', '/console/agents']) {
      const res = await server.api.get(path, { key: null, headers: HTML });
      expect(res.status, path).toBe(404);
      expect(res.body).toMatchObject({ error: { code: 'not_found', message: expect.stringContaining('npm run build') } });
    }
    expect((await server.api.get('/api/v1/auth/whoami')).status).toBe(200);
  });
});
