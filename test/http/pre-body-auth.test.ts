import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { startPartialRequest, type PartialAnswer } from '../helpers/partial-request.js';
import { within } from '../helpers/wait.js';
import { useServer } from '../helpers/server.js';
import { keyPair, signedHeaders } from '../helpers/signing.js';

const KEYS = '/api/v1/auth/agents/alice/public-keys';
const JSON_TYPE = { 'content-type': 'application/json' };
// What a client sends of a body it declares larger: the server must answer without the rest.
const FIRST_BYTES = Buffer.from(`{"public_key":"${'A'.repeat(1000)}`);

function envelope(answer: PartialAnswer) {
  return { status: answer.status, code: (JSON.parse(answer.text) as { error: { code: string } }).error.code };
}

describeEachDialect('checks before the body of a request without a key', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_UNAUTHENTICATED_BODY_BYTES: String(64 * 1024) } });
  const alice = keyPair();

  it('refuses a signed request before its body: unknown agent, stale timestamp, malformed signature', async () => {
    expect((await server.api.post(KEYS, { public_key: alice.raw })).status).toBe(201);
    const mallory = keyPair();
    const cases = {
      'agent without a key': signedHeaders(mallory.privateKey, 'mallory', 'POST', KEYS),
      'stale timestamp': signedHeaders(alice.privateKey, 'alice', 'POST', KEYS, '', new Date(Date.now() - 301_000).toISOString()),
      'malformed signature': { ...signedHeaders(alice.privateKey, 'alice', 'POST', KEYS), 'x-signature': 'bm90IGEgc2lnbmF0dXJl' },
    };
    for (const [name, headers] of Object.entries(cases)) {
      const partial = startPartialRequest(server.url + KEYS, 'POST', { ...headers, ...JSON_TYPE }, 512 * 1024, FIRST_BYTES);
      const answer = await within(partial.answer, 5000, `answer to the ${name} case`);
      partial.request.destroy();
      expect({ name, ...envelope(answer) }).toEqual({ name, status: 401, code: 'unauthorized' });
      expect(answer.headers.connection).toBe('close');
    }
  });

  it('answers an unknown or paused webhook token before the body', async () => {
    const created = await server.api.post('/core/api/v1/routines', { name: 'early', trigger_type: 'webhook', target_agent: 'early' });
    const token: string = created.body.data.webhook_token;
    const webhook = (t: string) =>
      startPartialRequest(`${server.url}/core/api/v1/routines/webhook/${t}`, 'POST', JSON_TYPE, 512 * 1024, FIRST_BYTES);

    const unknown = webhook('not-a-token');
    expect(envelope(await within(unknown.answer, 5000, 'answer to an unknown token'))).toEqual({ status: 404, code: 'not_found' });
    unknown.request.destroy();

    expect((await server.api.patch(`/core/api/v1/routines/${created.body.data.id}`, { enabled: false })).status).toBe(200);
    const paused = webhook(token);
    expect(envelope(await within(paused.answer, 5000, 'answer to a paused routine'))).toEqual({ status: 409, code: 'conflict' });
    paused.request.destroy();

    expect((await server.api.patch(`/core/api/v1/routines/${created.body.data.id}`, { enabled: true })).status).toBe(200);
    const fired = await server.api.post(`/core/api/v1/routines/webhook/${token}`, { order: 1 }, { key: null });
    expect(fired.status).toBe(202);
  });

  it('caps the bytes held by bodies awaiting their signature check (503 with Retry-After), and releases them', async () => {
    // Eight 16 KiB bodies against a 64 KiB cap: four are held, four refused, whatever their order.
    const size = 16 * 1024;
    const body = Buffer.concat([FIRST_BYTES, Buffer.alloc(size - FIRST_BYTES.length - 2, 0x41), Buffer.from('"}')]);
    const headers = { ...signedHeaders(alice.privateKey, 'alice', 'POST', KEYS, 'some other body'), ...JSON_TYPE };
    const partials = Array.from({ length: 8 }, () => startPartialRequest(server.url + KEYS, 'POST', headers, size, FIRST_BYTES));
    const refused: PartialAnswer[] = [];
    await within(
      new Promise<void>((resolve) => {
        for (const partial of partials) {
          void partial.answer.then((answer) => {
            refused.push(answer);
            if (refused.length === 4) resolve();
          });
        }
      }),
      10_000,
      'four refusals',
    );
    for (const answer of refused) {
      expect(envelope(answer)).toEqual({ status: 503, code: 'service_unavailable' });
      expect(answer.headers['retry-after']).toBe('1');
    }

    // The four held ones are read whole and then checked: this signature covers another body.
    // (The refused ones have their answer already.)
    const answers = await within(
      Promise.all(
        partials.map(async (partial) => {
          partial.request.end(body.subarray(FIRST_BYTES.length));
          return partial.answer;
        }),
      ),
      10_000,
      'answers to the held requests',
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([401, 401, 401, 401, 503, 503, 503, 503]);

    // Their bytes were released: a signed request with a body of the cap's size goes through.
    const other = keyPair();
    const fresh = JSON.stringify({ public_key: other.pem });
    const ok = await server.api.post(KEYS, fresh, {
      key: null,
      raw: true,
      headers: { ...signedHeaders(alice.privateKey, 'alice', 'POST', KEYS, fresh), ...JSON_TYPE },
    });
    expect(ok.status).toBe(201);
  });
});

describeEachDialect('request timeout', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_REQUEST_TIMEOUT_S: '1' } });

  it('cuts a body that does not arrive in time with 408', async () => {
    const alice = keyPair();
    expect((await server.api.post(KEYS, { public_key: alice.raw })).status).toBe(201);
    const headers = { ...signedHeaders(alice.privateKey, 'alice', 'POST', KEYS), ...JSON_TYPE };
    const stalled = startPartialRequest(server.url + KEYS, 'POST', headers, 4096, FIRST_BYTES);
    const answer = await within(stalled.answer, 10_000, 'timeout of a stalled body');
    expect(answer.status).toBe(408);
    stalled.request.destroy();
  });
});
