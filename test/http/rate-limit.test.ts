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
