import { expect, it } from 'vitest';
import { OPERATIONS } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

describeEachDialect('SDK operations match the OpenAPI document', (dialect) => {
  const server = useServer(dialect);

  it('every documented operation is in the SDK and every SDK operation is documented', async () => {
    const res = await server.api.get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const documented = new Set<string>();
    for (const [path, item] of Object.entries<Record<string, unknown>>(res.body.paths)) {
      for (const method of Object.keys(item)) if (METHODS.has(method)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const inSdk = new Set(Object.values(OPERATIONS).flatMap((domain) => Object.values(domain).map(([method, path]) => `${method} ${path}`)));
    expect([...documented].filter((op) => !inSdk.has(op)).sort()).toEqual([]);
    expect([...inSdk].filter((op) => !documented.has(op)).sort()).toEqual([]);
  });
});
