import { context, type Attributes } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createAgent, genAiUsageProcessor, Switchboard, withUsage, type Handler } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** A model call's span as GenAI instrumentations make it. */
const chat = (model: string, input: number, output: number, extra: Attributes = {}): Attributes => ({
  'gen_ai.operation.name': 'chat',
  'gen_ai.request.model': model,
  'gen_ai.usage.input_tokens': input,
  'gen_ai.usage.output_tokens': output,
  ...extra,
});

describeEachDialect('the agent worker reports the usage of its handlers’ GenAI spans', (dialect) => {
  const server = useServer(dialect);
  // The user's OpenTelemetry setup: a context manager (so the handler's context follows its awaits) and a provider with the processor.
  let registered = false;
  beforeAll(() => {
    registered = context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  });
  const provider = new BasicTracerProvider({ spanProcessors: [genAiUsageProcessor()] });
  const tracer = provider.getTracer('llm');
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await Promise.all(stops.splice(0).map((stop) => stop()));
  });
  afterAll(async () => {
    await provider.shutdown();
    if (registered) context.disable();
  });
  let seq = 0;
  const unique = (name: string) => `${name}-${dialect}-${++seq}`;

  /** A span named `name` with `attributes`, ended after `work` (in its context) resolves. */
  async function span<T>(name: string, attributes: Attributes, work: () => Promise<T> | T = () => undefined as T): Promise<T> {
    return tracer.startActiveSpan(name, { attributes }, async (s) => {
      try {
        return await work();
      } finally {
        s.end();
      }
    });
  }

  /** Starts a worker with `handler`, sends it one message, and answers the usage recorded for the agent by model. */
  async function usageOf(transport: 'channel' | 'poll', handler: Handler) {
    const agentId = unique(`genai-${transport}`);
    const agent = await server.agent(agentId);
    const client = new Switchboard({ url: agent.baseUrl, apiKey: agent.key! });
    const worker = createAgent({ client, agentId, transport, concurrency: 1, heartbeatIntervalMs: 0, pollTimeoutSeconds: 1 });
    const handled: string[] = [];
    worker.on('*', async (message, ctx) => {
      const result = await handler(message, ctx);
      handled.push(message.message_id);
      return result;
    });
    const started = worker.start();
    stops.push(async () => {
      await started;
      await worker.stop();
    });
    const sent = await server.api.post('/api/v1/messaging/send', { destination: agentId, event_name: 'work', payload: {} });
    expect(sent.status, sent.text).toBe(201);
    const messageId = sent.body.data.message_id as string;
    // Handled, and neither pending nor leased: the acknowledgement (and the usage in its transaction) committed.
    const inbox = async (state: string) =>
      (await server.api.get(`/api/v1/messaging/inboxes/${agentId}/messages?state=${state}`)).body.data as unknown[];
    await waitFor(
      async () => handled.includes(messageId) && (await inbox('leased')).length === 0 && (await inbox('pending')).length === 0,
      10_000,
    );
    const res = await server.api.get(`/api/v1/usage?group_by=model&agent_id=${agentId}`);
    expect(res.status, res.text).toBe(200);
    return res.body.data.rows as { key: string; count: number; input_tokens: number; output_tokens: number; cached_tokens: number }[];
  }

  it.each(['channel', 'poll'] as const)('sums the model calls’ spans, not an agent span that totals them again (%s)', async (transport) => {
    // Started outside any handler's call: not counted.
    await span('chat outside', chat('gpt-outside', 1000, 1000));
    const rows = await usageOf(transport, async () => {
      await span('invoke_agent writer', chat('gpt-big', 130, 21), async () => {
        await span('chat gpt-big', chat('gpt-big', 100, 20, { 'gen_ai.response.model': 'gpt-big', 'gen_ai.provider.name': 'openai' }));
        await new Promise((resolve) => setTimeout(resolve, 1));
        await span('chat gpt-small', chat('gpt-small', 30, 1, { 'gen_ai.usage.cache_read.input_tokens': 10, 'gen_ai.system': 'openai' }));
      });
      await span('tool call', { 'gen_ai.operation.name': 'execute_tool' });
      return { done: true };
    });
    expect(rows).toEqual([{ key: 'gpt-big', count: 1, input_tokens: 130, output_tokens: 21, cached_tokens: 10, cost_usd: 0 }]);
  });

  it('keeps the usage a handler reports itself, and records none for a handler without GenAI spans', async () => {
    const own = await usageOf('poll', async () => {
      await span('chat', chat('gpt-span', 5, 5));
      return withUsage({ done: true }, { model: 'gpt-own', input_tokens: 1, output_tokens: 2 });
    });
    expect(own).toMatchObject([{ key: 'gpt-own', input_tokens: 1, output_tokens: 2 }]);
    expect(await usageOf('poll', () => span('plain work', { 'app.step': 'x' }))).toEqual([]);
  });
});
