import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('rate limiting', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_RATE_LIMIT: '3', SWITCHBOARD_RATE_WINDOW_S: '60' } });

  it('counts per principal, sets the headers and answers 429 with Retry-After', async () => {
    const agent = await server.agent('limited');
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await agent.get('/api/v1/auth/whoami');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('3');
      const reset = Number(res.headers.get('x-ratelimit-reset'));
      expect(reset).toBeGreaterThan(Date.now() / 1000);
      expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 61);
      seen.push(Number(res.headers.get('x-ratelimit-remaining')));
    }
    expect(seen).toEqual([2, 1, 0]);
    const limited = await agent.get('/api/v1/auth/whoami');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');

    // Another principal has its own budget; a second key of the same agent shares the agent's.
    const other = await server.agent('unlimited-yet');
    expect((await other.get('/api/v1/auth/whoami')).status).toBe(200);
    const sameAgent = await server.agent('limited');
    expect((await sameAgent.get('/api/v1/auth/whoami')).status).toBe(429);
  });

  it('leaves health probes out of every budget', async () => {
    for (let i = 0; i < 5; i++) {
      const res = await server.api.get('/healthz', { key: null });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});

describeEachDialect('rate limiting disabled', (dialect) => {
  const server = useServer(dialect, { env: { SWITCHBOARD_RATE_LIMIT: '0' } });

  it('sends no budget headers and never answers 429 when the limit is 0', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await server.api.get('/api/v1/auth/whoami');
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});

describeEachDialect('rate limiting of requests without a principal', (dialect) => {
  // An hour's window, so that no window boundary falls inside the test.
  const server = useServer(dialect, {
    env: { SWITCHBOARD_RATE_LIMIT: '100', SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '4', SWITCHBOARD_RATE_WINDOW_S: '3600' },
  });

  it('spends a budget of their own per client address, with the headers on every answer, 401 and 404 included', async () => {
    const refused = [
      await server.api.get('/api/v1/auth/whoami', { key: null }),
      await server.api.get('/api/v1/auth/whoami', { key: `sk_${'x'.repeat(40)}` }),
      await server.api.get('/api/v1/auth/whoami', {
        key: null,
        headers: { 'x-agent-id': 'nobody', 'x-timestamp': new Date().toISOString(), 'x-signature': 'AA==' },
      }),
      await server.api.get('/api/v1/no-such-route', { key: null }),
    ];
    expect(refused.map((res) => res.status)).toEqual([401, 401, 401, 401]);
    expect(refused.map((res) => res.headers.get('x-ratelimit-limit'))).toEqual(['4', '4', '4', '4']);
    expect(refused.map((res) => res.headers.get('x-ratelimit-remaining'))).toEqual(['3', '2', '1', '0']);
    for (const res of refused) expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);

    // Past the budget, a client guessing keys (and public routes from the same address) get 429.
    const guessing = await server.api.get('/api/v1/auth/whoami', { key: `sk_${'y'.repeat(40)}` });
    expect(guessing.status).toBe(429);
    expect(guessing.body.error.code).toBe('rate_limited');
    expect(Number(guessing.headers.get('retry-after'))).toBeGreaterThan(0);
    const publicRoute = await server.api.get('/api/v1/openapi.json', { key: null });
    expect(publicRoute.status).toBe(429);
    expect(publicRoute.headers.get('x-ratelimit-remaining')).toBe('0');

    // Authenticated callers keep their own budgets, and their 404s carry them.
    const own = await server.api.get('/api/v1/auth/whoami');
    expect(own.status).toBe(200);
    expect(own.headers.get('x-ratelimit-limit')).toBe('100');
    const unknownRoute = await server.api.get('/api/v1/no-such-route');
    expect(unknownRoute.status).toBe(404);
    expect(unknownRoute.headers.get('x-ratelimit-limit')).toBe('100');
    expect(unknownRoute.headers.get('x-ratelimit-remaining')).toBe('98');
  });
});

describeEachDialect('client addresses behind a trusted proxy', (dialect) => {
  const anonymous = { SWITCHBOARD_RATE_LIMIT_ANONYMOUS: '2', SWITCHBOARD_RATE_WINDOW_S: '3600' };
  const proxied = useServer(dialect, { env: { ...anonymous, SWITCHBOARD_TRUSTED_PROXIES: '10.9.9.9, 127.0.0.0/8' } });
  const direct = useServer(dialect, { env: anonymous });
  const refusedFrom = (api: typeof proxied.api, forwardedFor: string) =>
    api.get('/api/v1/auth/whoami', { key: null, headers: { 'x-forwarded-for': forwardedFor } });

  it('gives each address X-Forwarded-For names its own anonymous budget when the proxy is trusted', async () => {
    // The nearest address not of a trusted proxy is the client's: 10.9.9.9 is a trusted hop.
    expect((await refusedFrom(proxied.api, '203.0.113.7')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await refusedFrom(proxied.api, '203.0.113.7, 10.9.9.9')).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await refusedFrom(proxied.api, '203.0.113.7')).status).toBe(429);
    // Another client behind the same proxy is not held to the first one's budget.
    const other = await refusedFrom(proxied.api, '198.51.100.20');
    expect(other.status).toBe(401);
    expect(other.headers.get('x-ratelimit-remaining')).toBe('1');
    // A client that forges the header only names an address left of the real one: it is not trusted.
    const forged = await refusedFrom(proxied.api, '198.51.100.20, 203.0.113.99');
    expect(forged.headers.get('x-ratelimit-remaining')).toBe('1');
  });

  it('ignores X-Forwarded-For without trusted proxies', async () => {
    expect((await refusedFrom(direct.api, '203.0.113.1')).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await refusedFrom(direct.api, '203.0.113.2')).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await refusedFrom(direct.api, '203.0.113.3')).status).toBe(429);
  });
});
