import { Writable } from 'node:stream';
import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer } from '../helpers/server.js';

/** The server's log as parsed lines. */
function memoryLog(): { destination: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const text = () => chunks.join('');
  return {
    destination,
    text,
    lines: () =>
      text()
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

describeEachDialect('the access log', (dialect) => {
  it('writes one line per request, refused and failed ones at info and the rest at debug: route pattern, status, time, principal and request id, and no secret', async () => {
    const log = memoryLog();
    const server = await startServer(dialect, { logDestination: log.destination });
    try {
      const agent = await server.agent('log-reader');
      expect((await agent.post('/api/v1/discovery/capabilities', { capability: 'log.read' })).status).toBe(201);
      const ok = await agent.get('/api/v1/discovery/agents/log-reader/health');
      expect(ok.status).toBe(200);
      const refused = await server.api.get('/api/v1/auth/keys?secret=sk_in_a_query', { key: 'sk_wrong_key_for_the_log_test' });
      expect(refused.status).toBe(401);
      await server.app.platform.database.close();
      const failed = await server.api.get('/api/v1/auth/keys');
      expect(failed.status).toBe(500);

      const requests = log.lines().filter((line) => line.msg === 'request');
      const byId = (id: string | null) => requests.filter((line) => line.req_id === id);
      expect(byId(ok.headers.get('x-request-id'))).toEqual([
        expect.objectContaining({
          level: 20,
          method: 'GET',
          route: '/api/v1/discovery/agents/:agent_id/health',
          status: 200,
          principal: 'log-reader',
        }),
      ]);
      expect(byId(refused.headers.get('x-request-id'))).toEqual([
        expect.objectContaining({ level: 30, method: 'GET', route: '/api/v1/auth/keys', status: 401, principal: null, ip: '127.0.0.1' }),
      ]);
      expect(byId(failed.headers.get('x-request-id'))).toEqual([
        expect.objectContaining({ level: 30, status: 500, route: '/api/v1/auth/keys' }),
      ]);
      for (const line of requests) expect(typeof line.ms).toBe('number');
      // The 500's cause is logged at error, with the same request id.
      expect(
        log
          .lines()
          .filter((line) => line.level === 50)
          .map((line) => line.reqId),
      ).toContain(failed.headers.get('x-request-id'));
      const text = log.text();
      for (const secret of [server.adminKey, 'sk_wrong_key_for_the_log_test', 'sk_in_a_query']) expect(text).not.toContain(secret);
    } finally {
      await server.close();
    }
  });
});
