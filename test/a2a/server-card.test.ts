import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import { FakeClock } from '../helpers/clock.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

describeEachDialect('A2A server card', (dialect) => {
  const clock = new FakeClock(Date.now());
  const server = useServer(dialect, { clock });

  const skills = async (): Promise<string[]> => {
    const res = await fetch(`${server.url}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    // The card is protobuf JSON: an empty list is left out.
    return (((await res.json()) as { skills?: { id: string }[] }).skills ?? []).map((skill) => skill.id);
  };

  it('reuses its skill list for 30 s, so anonymous readers cannot make the server read every registration per request', async () => {
    const capability = `cached-${randomUUID().slice(0, 8)}`;
    expect(await skills()).not.toContain(capability);
    const agentId = `card-${randomUUID().slice(0, 8)}`;
    const agent = await server.agent(agentId);
    expect((await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability })).status).toBe(201);

    expect(await skills()).not.toContain(capability);
    clock.advance(29_000);
    expect(await skills()).not.toContain(capability);
    clock.advance(1_000);
    expect(await skills()).toContain(capability);
  });
});
