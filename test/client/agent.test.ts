import { expect, it } from 'vitest';
import { createAgent, Switchboard, type Message } from '../../src/client/index.js';
import { main as approvalPlan } from '../../examples/approval-plan.js';
import { signingClient } from '../../examples/connect.js';
import { main as echoAgent } from '../../examples/echo-agent.js';
import { main as summarizer } from '../../examples/summarizer-agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeEachDialect('createAgent and the examples', (dialect) => {
  const server = useServer(dialect);
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });

  it('the echo example answers a message with a reply to its sender', async () => {
    const agent = await echoAgent(admin(), 'echo');
    try {
      const caller = await signingClient(admin(), 'echo-caller');
      await caller.messaging.send({ body: { destination: 'echo', event_name: 'echo', payload: { say: 'hi' } } });
      const reply = await waitFor(async () => (await caller.messaging.receive({ query: { timeout: 1 } })).messages[0], 10_000);
      expect(reply).toMatchObject({ source: 'echo', event_name: 'echo.reply', payload: { say: 'hi' } });
    } finally {
      await agent.stop();
    }
  }, 20_000);

  it('the summarizer example makes its routine executions succeed', async () => {
    const client = admin();
    const example = await summarizer(client, 'summarizer');
    try {
      await client.routines.trigger({ path: { id: example.routine.id } });
      const execution = await waitFor(async () => {
        const executions = await client.routines.listExecutions({ path: { id: example.routine.id } });
        return executions.find((e: { status: string }) => e.status === 'success');
      }, 10_000);
      expect(JSON.parse(execution.output)).toEqual({ summary: 'Switchboard routes work to agents.', words: 9 });
    } finally {
      await example.stop();
    }
  }, 20_000);

  it('the plan example completes after an approval through the SDK', async () => {
    const client = admin();
    const example = await approvalPlan(client, `plan-${dialect}`);
    try {
      const runId = example.run.id;
      await waitFor(async () => (await client.coordination.getRun({ path: { run_id: runId } })).status === 'waiting', 10_000);
      await client.coordination.approveStep({ path: { run_id: runId, step_id: 'review' }, body: { approved: true } });
      const run = await waitFor(async () => {
        const current = await client.coordination.getRun({ path: { run_id: runId } });
        return current.status === 'completed' ? current : undefined;
      }, 10_000);
      expect(JSON.stringify(run.output)).toContain('On agents: agents matters; agents is hard.');
    } finally {
      await example.stop();
    }
  }, 30_000);

  it('a handler that throws leads to redelivery, then a dead letter', async () => {
    const client = await signingClient(admin(), 'thrower');
    const attempts: number[] = [];
    const agent = createAgent({ client, agentId: 'thrower', heartbeatIntervalMs: 0, pollTimeoutSeconds: 1 });
    agent.on('work', (message) => {
      attempts.push(message.retry_count);
      throw new Error('boom');
    });
    await agent.start();
    try {
      const sent = await admin().messaging.send({ body: { destination: 'thrower', event_name: 'work', max_deliveries: 2 } });
      const dead = await waitFor(async () => {
        const letters = await admin().messaging.listDeadLetters({ query: { agent_id: 'thrower' } });
        return letters.find((d: { message_id: string }) => d.message_id === sent.message_id);
      }, 20_000);
      expect(attempts).toEqual([0, 1]);
      expect(dead.reason).toContain('boom');
    } finally {
      await agent.stop();
    }
  }, 30_000);

  it('a slow handler keeps its lease, and stop() loses no message', async () => {
    const client = await signingClient(admin(), 'slow');
    const seen: Message[] = [];
    const options = { client, agentId: 'slow', heartbeatIntervalMs: 0, pollTimeoutSeconds: 1, visibilityTimeoutSeconds: 1, concurrency: 3 };
    const handler = async (message: Message) => {
      seen.push(message);
      await sleep(message.event_name === 'slow' ? 2500 : 50);
      return { done: message.message_id };
    };
    const first = createAgent(options).on('*', handler);
    await first.start();
    const sender = admin();
    await sender.messaging.send({ body: { destination: 'slow', event_name: 'slow' } });
    await sender.messaging.sendBatch({ body: { messages: Array.from({ length: 20 }, (_, i) => ({ destination: 'slow', event_name: 'fast', payload: { i } })) } });
    await waitFor(() => seen.length >= 4, 10_000);
    await first.stop();
    const handledByFirst = seen.length;

    const second = createAgent(options).on('*', handler);
    await second.start();
    await waitFor(() => seen.length >= 21, 15_000);
    await second.stop();

    // Every message handled exactly once: nothing received by the stopped agent was lost or repeated.
    expect(new Set(seen.map((m) => m.message_id)).size).toBe(21);
    expect(seen.length).toBe(21);
    expect(seen.every((m) => m.retry_count === 0)).toBe(true);
    expect(handledByFirst).toBeLessThan(21);
    const { messages } = await client.messaging.receive({ query: { timeout: 0 } });
    expect(messages).toEqual([]);
  }, 40_000);
});
