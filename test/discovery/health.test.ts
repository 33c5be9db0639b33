import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { namespace, register } from './fixtures.js';

const TTL_S = 10;

describeEachDialect('discovery heartbeats and health', (dialect) => {
  const clock = new FakeClock();
  const server = useServer(dialect, { clock, env: { SWITCHBOARD_HEALTH_TTL_S: String(TTL_S) } });

  const health = (agentId: string) => server.api.get(`/api/v1/discovery/agents/${agentId}/health`);

  it('records a heartbeat and reports health, load and uptime from the clock', async () => {
    const id = `${namespace()}-a`;
    const agent = await server.agent(id);
    const start = clock.now();
    const first = await agent.post('/api/v1/discovery/heartbeat', { load: 0.4, metadata: { version: '1.2' } });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      agent_id: id,
      status: 'healthy',
      load: 0.4,
      last_heartbeat: new Date(start).toISOString(),
      uptime_seconds: 0,
      ttl_seconds: TTL_S,
      metadata: { version: '1.2' },
    });

    // Beats closer together than the TTL keep the uptime running; a beat without load or
    // metadata keeps the previous ones.
    for (let i = 0; i < 5; i++) {
      clock.advance(8_000);
      await agent.post('/api/v1/discovery/heartbeat', {});
    }
    clock.advance(2_500);
    const running = await health(id);
    expect(running.body.data).toMatchObject({ status: 'healthy', load: 0.4, uptime_seconds: 42, metadata: { version: '1.2' } });
    expect(running.body.data.last_heartbeat).toBe(new Date(start + 40_000).toISOString());

    const busy = await agent.post('/api/v1/discovery/heartbeat', { load: 0.9 });
    expect(busy.body.data).toMatchObject({ status: 'degraded', load: 0.9 });
  });

  it('turns a silent agent unhealthy once the TTL passes, without any write, and restarts its uptime when it returns', async () => {
    const id = `${namespace()}-a`;
    const agent = await server.agent(id);
    await agent.post('/api/v1/discovery/heartbeat', { load: 0.1 });
    clock.advance(TTL_S * 1000);
    expect((await health(id)).body.data).toMatchObject({ status: 'healthy', uptime_seconds: TTL_S });
    clock.advance(1);
    expect((await health(id)).body.data).toMatchObject({ status: 'unhealthy', uptime_seconds: 0, load: 0.1 });
    // Even a busy agent is unhealthy when silent.
    await agent.post('/api/v1/discovery/heartbeat', { load: 0.99 });
    expect((await health(id)).body.data.status).toBe('degraded');
    clock.advance(TTL_S * 1000 + 1);
    expect((await health(id)).body.data.status).toBe('unhealthy');

    const back = await agent.post('/api/v1/discovery/heartbeat', { load: 0.2 });
    expect(back.body.data).toMatchObject({ status: 'healthy', uptime_seconds: 0 });
    clock.advance(3_000);
    expect((await health(id)).body.data.uptime_seconds).toBe(3);
  });

  it('reports unknown for a registered agent that never sent a heartbeat, 404 for an agent nobody knows', async () => {
    const ns = namespace();
    await register(server.api, `${ns}-a`, `${ns}.work`);
    const res = await health(`${ns}-a`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      agent_id: `${ns}-a`,
      status: 'unknown',
      load: null,
      last_heartbeat: null,
      uptime_seconds: 0,
      ttl_seconds: TTL_S,
      metadata: {},
    });
    const missing = await health(`${ns}-nobody`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('validates heartbeats: load within 0..1, known fields only, an agent for admins', async () => {
    const id = `${namespace()}-a`;
    for (const body of [
      { agent_id: id, load: 1.5 },
      { agent_id: id, load: -0.1 },
      { agent_id: id, load: 'high' },
      { agent_id: id, metadata: [] },
      { agent_id: id, status: 'healthy' },
    ]) {
      const res = await server.api.post('/api/v1/discovery/heartbeat', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const noAgent = await server.api.post('/api/v1/discovery/heartbeat', { load: 0.1 });
    expect(noAgent.status).toBe(400);
    expect(noAgent.body.error.details[0].field).toBe('agent_id');
    // Edges of the range are accepted.
    expect((await server.api.post('/api/v1/discovery/heartbeat', { agent_id: id, load: 0 })).status).toBe(200);
    expect((await server.api.post('/api/v1/discovery/heartbeat', { agent_id: id, load: 1 })).body.data.status).toBe('degraded');
  });
});
