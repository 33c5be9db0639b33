import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { anyRequest, operationsOf, problemWith, seedObjects } from './requests.js';

/** Fixed, so a failure here is a failure on every run; bench/fuzz.ts draws far more. */
const SEED = 20;
const RUNS = 1_000;

describeEachDialect('fuzzing every operation of the OpenAPI document', (dialect) => {
  const server = useServer(dialect);

  it('answers hostile requests without a 5xx, every error in the envelope with its request id', async () => {
    const doc = (await server.api.get('/api/v1/openapi.json', { key: null })).body;
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(100);
    const ids = await seedObjects(server.url, server.adminKey);
    await fc.assert(
      fc.asyncProperty(anyRequest(operations, ids, server.adminKey), async (request) => {
        const res = await fetch(server.url + request.url, {
          method: request.method,
          headers: request.headers,
          body: request.body,
          signal: AbortSignal.timeout(10_000),
        });
        const answer = { status: res.status, headers: res.headers, text: await res.text() };
        expect(problemWith(answer), `${request.method} ${request.url} ${request.body?.slice(0, 300) ?? ''}`).toBeNull();
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);
});
