import fc from 'fast-check';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { anyRequest, describeRequest, operationsOf, problemWith, seedObjects, send } from './requests.js';

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
        expect(problemWith(await send(server.url, request, 10_000), request), describeRequest(request)).toBeNull();
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }, 120_000);
});
