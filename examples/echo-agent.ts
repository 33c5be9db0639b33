/**
 * The echo agent: answers every `echo` message with an `echo.reply` to its sender.
 *   npm start   # another terminal
 *   node --import tsx examples/echo-agent.ts
 */
import { pathToFileURL } from 'node:url';
import { createAgent, type Switchboard } from '../src/client/index.js';
import { adminClient, runUntilInterrupted, signingClient } from './connect.js';

export async function main(admin: Switchboard, agentId = 'echo') {
  const client = await signingClient(admin, agentId);
  const agent = createAgent({ client, agentId, capabilities: ['echo'], heartbeatIntervalMs: 10_000 });
  agent.on('echo', async (message) => {
    await client.messaging.send({ body: { destination: message.source, event_name: 'echo.reply', payload: message.payload } });
    return { echoed: message.payload };
  });
  await agent.start();
  return agent;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runUntilInterrupted(() => main(adminClient()));
}
