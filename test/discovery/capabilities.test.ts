import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { heartbeat, lookup, namespace, register } from './fixtures.js';

describeEachDialect('discovery capabilities and groups', (dialect) => {
  const server = useServer(dialect);

  it('registers a capability (201) and updates it in place when registered again (200)', async () => {
    const ns = namespace();
    const agent = await server.agent(`${ns}-a`);
    const first = await agent.post('/api/v1/discovery/capabilities', {
      agent_id: `${ns}-a`,
      capability: `${ns}.summarize`,
      metadata: { description: 'condense text', weight: 2 },
      groups: ['nlp', 'writers'],
    });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({
      agent_id: `${ns}-a`,
      capability: `${ns}.summarize`,
      metadata: { description: 'condense text', weight: 2 },
      groups: ['nlp', 'writers'],
    });
    expect(first.body.data.id).toMatch(/^cap_/);
    expect(first.body.data.created_at).toMatch(/Z$/);

    // The agent may leave out agent_id: it registers for itself.
    const again = await agent.post('/api/v1/discovery/capabilities', {
      capability: `${ns}.summarize`,
      metadata: { description: 'condense long text' },
      groups: ['nlp'],
    });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ id: first.body.data.id, metadata: { description: 'condense long text' }, groups: ['nlp'] });

    const listed = await server.api.get(`/api/v1/discovery/capabilities?agent_id=${ns}-a`);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.meta).toMatchObject({ total: 1, limit: 50, offset: 0 });
    const got = await server.api.get(`/api/v1/discovery/capabilities/${first.body.data.id}`);
    expect(got.body.data).toEqual(again.body.data);
  });

  it('registers the same capability once under concurrent re-registration', async () => {
    const ns = namespace();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => register(server.api, `${ns}-a`, `${ns}.task`, { attempt: i })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    const listed = await server.api.get(`/api/v1/discovery/capabilities?agent_id=${ns}-a`);
    expect(listed.body.meta.total).toBe(1);
  });

  it('validates capability names, groups, metadata and unknown fields', async () => {
    const ns = namespace();
    const bad = [
      { agent_id: `${ns}-a`, capability: 'Text.Summarize' },
      { agent_id: `${ns}-a`, capability: 'text..summarize' },
      { agent_id: `${ns}-a`, capability: '.text' },
      { agent_id: `${ns}-a`, capability: 'text.*' },
      { agent_id: `${ns}-a`, capability: 'text summarize' },
      { agent_id: `${ns}-a` },
      { agent_id: `${ns}-a`, capability: 'text.ok', groups: ['has space'] },
      { agent_id: `${ns}-a`, capability: 'text.ok', groups: ['dup', 'dup'] },
      { agent_id: `${ns}-a`, capability: 'text.ok', metadata: { weight: -1 } },
      { agent_id: `${ns}-a`, capability: 'text.ok', metadata: { trust_score: 1.5 } },
      { agent_id: `${ns}-a`, capability: 'text.ok', metadata: { tags: [{ not: 'a string' }] } },
      { agent_id: `${ns}-a`, capability: 'text.ok', metadata: 'nope' },
      { agent_id: `${ns}-a`, capability: 'text.ok', colour: 'blue' },
      { agent_id: 'bad agent', capability: 'text.ok' },
    ];
    for (const body of bad) {
      const res = await server.api.post('/api/v1/discovery/capabilities', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
    }
    const huge = await server.api.post('/api/v1/discovery/capabilities', {
      agent_id: `${ns}-a`,
      capability: 'text.ok',
      metadata: { blob: 'x'.repeat(70_000) },
    });
    expect(huge.status).toBe(400);
    expect(huge.body.error.details).toEqual([{ field: 'metadata', message: 'must be at most 64 KiB of JSON' }]);
    // An admin without an agent binding must say which agent.
    const noAgent = await server.api.post('/api/v1/discovery/capabilities', { capability: 'text.ok' });
    expect(noAgent.status).toBe(400);
    expect(noAgent.body.error.details[0].field).toBe('agent_id');
  });

  it('forbids an agent registering, deleting or heartbeating for another agent (403)', async () => {
    const ns = namespace();
    const alice = await server.agent(`${ns}-alice`);
    const mallory = await server.agent(`${ns}-mallory`);
    const cap = await register(alice, `${ns}-alice`, `${ns}.secret`);
    const attempts = [
      await mallory.post('/api/v1/discovery/capabilities', { agent_id: `${ns}-alice`, capability: `${ns}.evil` }),
      await mallory.delete(`/api/v1/discovery/capabilities/${cap.id}`),
      await mallory.delete(`/api/v1/discovery/agents/${ns}-alice`),
      await mallory.post('/api/v1/discovery/heartbeat', { agent_id: `${ns}-alice`, load: 0.1 }),
    ];
    for (const res of attempts) {
      expect(res.status, res.text).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
    // Reading is open to every authenticated principal.
    expect((await mallory.get(`/api/v1/discovery/capabilities/${cap.id}`)).status).toBe(200);
    expect((await server.api.get(`/api/v1/discovery/capabilities?agent_id=${ns}-alice`)).body.meta.total).toBe(1);
    expect((await server.api.get('/api/v1/discovery/capabilities', { key: null })).status).toBe(401);
  });

  it('deletes one capability, then every capability of an agent', async () => {
    const ns = namespace();
    const agent = await server.agent(`${ns}-a`);
    const one = await register(agent, `${ns}-a`, `${ns}.one`, {}, ['g']);
    await register(agent, `${ns}-a`, `${ns}.two`, {}, ['g']);
    await register(agent, `${ns}-a`, `${ns}.three`);
    await heartbeat(agent, `${ns}-a`, 0.2);

    const removed = await agent.delete(`/api/v1/discovery/capabilities/${one.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: one.id, deleted: true });
    expect((await server.api.get(`/api/v1/discovery/capabilities/${one.id}`)).status).toBe(404);
    expect((await agent.delete(`/api/v1/discovery/capabilities/${one.id}`)).status).toBe(404);

    const gone = await agent.delete(`/api/v1/discovery/agents/${ns}-a`);
    expect(gone.status).toBe(200);
    expect(gone.body.data).toEqual({ id: `${ns}-a`, deleted: true, capabilities_removed: 2 });
    expect((await server.api.get(`/api/v1/discovery/capabilities?agent_id=${ns}-a`)).body.meta.total).toBe(0);
    expect((await lookup(server.api, { capability: `${ns}.*` })).ids).toEqual([]);
    expect((await server.api.get(`/api/v1/discovery/agents/${ns}-a/health`)).status).toBe(404);
    expect((await agent.delete(`/api/v1/discovery/agents/${ns}-a`)).status).toBe(404);
  });

  it('lists capabilities filtered by name, wildcard and group, paginated', async () => {
    const ns = namespace();
    await register(server.api, `${ns}-a`, `${ns}.text.summarize`, {}, [`${ns}-g`]);
    await register(server.api, `${ns}-b`, `${ns}.text.translate`);
    await register(server.api, `${ns}-b`, `${ns}.image.resize`, {}, [`${ns}-g`]);
    // `_` is a LIKE wildcard; the prefix filter must not treat it as one.
    await register(server.api, `${ns}-c`, `${ns}.text_x.other`);

    const names = async (query: string) =>
      (await server.api.get(`/api/v1/discovery/capabilities?${query}`)).body.data.map((c: { capability: string }) => c.capability);
    expect(await names(`capability=${ns}.text.*`)).toEqual([`${ns}.text.summarize`, `${ns}.text.translate`]);
    expect(await names(`capability=${ns}.image.resize`)).toEqual([`${ns}.image.resize`]);
    expect(await names(`group=${ns}-g`)).toEqual([`${ns}.text.summarize`, `${ns}.image.resize`]);
    expect(await names(`agent_id=${ns}-b&capability=${ns}.*`)).toEqual([`${ns}.text.translate`, `${ns}.image.resize`]);
    const paged = await server.api.get(`/api/v1/discovery/capabilities?capability=${ns}.*&limit=2&offset=2`);
    expect(paged.body.data).toHaveLength(2);
    expect(paged.body.meta).toMatchObject({ total: 4, limit: 2, offset: 2 });
    expect((await server.api.get(`/api/v1/discovery/capabilities?capability=${ns}.*&limit=2&offset=10`)).body.meta.total).toBe(4);
    expect((await server.api.get('/api/v1/discovery/capabilities?capability=text.*.x')).status).toBe(400);
  });

  it('lists groups with agent counts and the agents of a group', async () => {
    const ns = namespace();
    const g1 = `${ns}-alpha`;
    const g2 = `${ns}-beta`;
    await register(server.api, `${ns}-a`, `${ns}.one`, {}, [g1, g2]);
    await register(server.api, `${ns}-a`, `${ns}.two`, {}, [g1]);
    await register(server.api, `${ns}-b`, `${ns}.one`, {}, [g1]);
    await register(server.api, `${ns}-c`, `${ns}.three`, {}, [g2]);
    await heartbeat(server.api, `${ns}-a`, 0.5);

    const groups = await server.api.get('/api/v1/discovery/groups?limit=500');
    expect(groups.status).toBe(200);
    const mine = groups.body.data.filter((g: { name: string }) => g.name.startsWith(ns));
    expect(mine).toEqual([
      { name: g1, agent_count: 2, capability_count: 3 },
      { name: g2, agent_count: 2, capability_count: 2 },
    ]);

    const members = await server.api.get(`/api/v1/discovery/groups/${g1}/agents`);
    expect(members.status).toBe(200);
    expect(members.body.meta).toMatchObject({ total: 2 });
    expect(members.body.data).toEqual([
      {
        agent_id: `${ns}-a`,
        capabilities: [`${ns}.one`, `${ns}.two`],
        health: 'healthy',
        load: 0.5,
        last_heartbeat: expect.stringMatching(/Z$/),
      },
      { agent_id: `${ns}-b`, capabilities: [`${ns}.one`], health: 'unknown', load: null, last_heartbeat: null },
    ]);
    const second = await server.api.get(`/api/v1/discovery/groups/${g1}/agents?limit=1&offset=1`);
    expect(second.body.data.map((m: { agent_id: string }) => m.agent_id)).toEqual([`${ns}-b`]);
    expect(second.body.meta.total).toBe(2);
    expect((await server.api.get(`/api/v1/discovery/groups/${ns}-none/agents`)).status).toBe(404);

    // Lookups filter by group; re-registering without the group takes the agent out of it.
    expect((await lookup(server.api, { capability: `${ns}.one`, group: g2 })).ids).toEqual([`${ns}-a`]);
    await register(server.api, `${ns}-a`, `${ns}.one`, {}, []);
    expect((await lookup(server.api, { capability: `${ns}.one`, group: g2 })).ids).toEqual([]);
  });
});
