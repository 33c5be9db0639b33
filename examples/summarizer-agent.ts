/**
 * The summarizer: a cron routine sends it `routine.execute` every minute; it answers with a
 * summary of the payload's text, which becomes the execution's output.
 *   npm start   # another terminal
 *   node --import tsx examples/summarizer-agent.ts
 */
import { pathToFileURL } from 'node:url';
import { createAgent, type Switchboard } from '../src/client/index.js';
import { adminClient, runUntilInterrupted, signingClient } from './connect.js';

/** The first sentence and the word count: a stand-in for a model call. */
export function summarize(text: string): { summary: string; words: number } {
  return { summary: text.split(/(?<=[.!?])\s/)[0] ?? '', words: text.split(/\s+/).filter(Boolean).length };
}

export async function main(admin: Switchboard, agentId = 'summarizer') {
  const client = await signingClient(admin, agentId);
  const agent = createAgent({ client, agentId, capabilities: ['text.summarize'] });
  // routine.execute carries { routine_id, execution_id, trigger, payload }: the routine's payload is inside.
  agent.on('routine.execute', (message) => summarize(String((message.payload as { payload?: { text?: unknown } }).payload?.text ?? '')));
  await agent.start();
  const routine = await admin.routines.create({
    body: {
      name: `summarize for ${agentId}`,
      trigger_type: 'cron',
      cron_expression: '* * * * *',
      target_agent: agentId,
      payload: { text: 'Switchboard routes work to agents. It also keeps schedules.' },
    },
  });
  return {
    agent,
    routine,
    async stop() {
      await admin.routines.delete({ path: { id: routine.id } });
      await agent.stop();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) runUntilInterrupted(() => main(adminClient()));
