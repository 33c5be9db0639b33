import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('the API docs', (dialect) => {
  const server = useServer(dialect);

  it('serves the interactive docs and the document they load, without credentials', async () => {
    const page = await server.api.get('/docs', { key: null });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    // The page loads its script, which loads the document from ./json.
    const script = await server.api.get('/docs/static/swagger-initializer.js', { key: null });
    expect(script.status).toBe(200);
    expect(script.text).toContain("'./json'");
    const loaded = await server.api.get('/docs/json', { key: null });
    const served = await server.api.get('/api/v1/openapi.json', { key: null });
    expect(loaded.status).toBe(200);
    expect(loaded.body).toEqual(served.body);
    expect(loaded.body.paths['/api/v1/messaging/send'].post.operationId).toBe('messaging_send');
  });
});
