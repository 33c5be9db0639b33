import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, expect, it } from 'vitest';
import { createAgent, PermanentError, Switchboard } from '../../src/client/index.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const idOf = (span: ReadableSpan) => span.spanContext().spanId;
const messageOf = (span: ReadableSpan) => span.attributes['messaging.message.id'];

describeEachDialect('traces', (dialect) => {
  const exporter = new InMemorySpanExporter();
  const server = useServer(dialect, { env: { OTEL_TRACES_EXPORTER: 'otlp' }, spanProcessor: new SimpleSpanProcessor(exporter) });
  const stops: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  /**
   * An SDK agent in this process. Its fetch calls are not instrumented and its loop starts in the
   * root context, so the only way its spans can join the run's trace is the message's traceparent.
   */
  async function agent(agentId: string, handle: (message: { payload: any; retry_count: number }) => unknown) {
    const api = await server.agent(agentId);
    const worker = createAgent({
      client: new Switchboard({ url: api.baseUrl, apiKey: api.key! }),
      agentId,
      concurrency: 1,
      heartbeatIntervalMs: 0,
      pollTimeoutSeconds: 1,
      // Its acks are HTTP requests, whose spans the test follows (over the channel they are frames).
      transport: 'poll',
      logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    worker.on('*', (message) =>
      trace.getTracer('agent').startActiveSpan('agent work', (span) => {
        try {
          return handle(message as never);
        } finally {
          span.end();
        }
      }),
    );
    await worker.start();
    stops.push(() => worker.stop());
  }

  it('follows a run in one trace: request → run → steps → the agent’s handler → ack → next step → completion, through retries', async () => {
    const agentId = `tracer-${dialect}`;
    const seen = new Map<string, number>();
    await agent(agentId, (message) => {
      const step = message.payload.step_id as string;
      const n = (seen.get(step) ?? 0) + 1;
      seen.set(step, n);
      // The first step fails for good once (a dead letter: the step is retried after its backoff, by the run timer);
      // the second is rejected once (the message is redelivered).
      if (n === 1 && step === 'first') throw new PermanentError('not yet');
      if (n === 1 && step === 'second') throw new Error('try again');
      return { step, n };
    });
    const plan = await server.api.post('/api/v1/coordination/plans', {
      alias: `traced-${dialect}`,
      steps: [
        { id: 'first', type: 'agent', agent: agentId, retry: { max_attempts: 2, backoff_seconds: 0.1 } },
        { id: 'second', type: 'agent', agent: agentId, depends_on: ['first'] },
      ],
    });
    expect(plan.status).toBe(201);
    exporter.reset();
    const started = await server.api.post('/api/v1/coordination/runs', { plan_id: plan.body.data.id, input: {} });
    expect(started.status).toBe(201);
    const runId = started.body.data.id as string;
    await waitFor(
      async () => (await server.api.get(`/api/v1/coordination/runs/${runId}`)).body.data.status === 'completed' || undefined,
      15_000,
    );
    // The last ack's request span ends after its answer is sent.
    await waitFor(() => byName(exporter.getFinishedSpans(), 'POST /api/v1/messaging/acknowledge').length === 2 || undefined);
    const spans = exporter.getFinishedSpans();

    const [request] = byName(spans, 'POST /api/v1/coordination/runs');
    expect(request).toBeDefined();
    const traceId = request!.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const [workflow] = byName(inTrace, `invoke_workflow traced-${dialect}`);
    expect(parentOf(workflow!)).toBe(idOf(request!));

    // Three invocations (first ×2, second), one message each, four deliveries, four settlements.
    const invocations = byName(inTrace, `invoke_agent ${agentId}`);
    const sends = byName(inTrace, `send ${agentId}`);
    const processed = byName(inTrace, `process ${agentId}`);
    const settles = byName(inTrace, `settle ${agentId}`);
    expect(invocations).toHaveLength(3);
    expect(sends).toHaveLength(3);
    expect(processed).toHaveLength(4);
    expect(settles).toHaveLength(4);
    expect(byName(inTrace, 'agent work')).toHaveLength(4);
    expect(byName(inTrace, 'POST /api/v1/messaging/acknowledge')).toHaveLength(2);
    expect(byName(inTrace, 'POST /api/v1/messaging/reject')).toHaveLength(2);

    // Each send is its invocation's child; each delivery's handler span is its send's child
    // (through the traceparent the message carried), and the agent's own work its child.
    const sendOf = (message: unknown) => sends.find((s) => messageOf(s) === message)!;
    for (const send of sends) expect(invocations.map(idOf)).toContain(parentOf(send));
    for (const process of processed) {
      expect(parentOf(process)).toBe(idOf(sendOf(messageOf(process))));
      expect(inTrace.filter((s) => s.name === 'agent work' && parentOf(s) === idOf(process))).toHaveLength(1);
    }
    // The ack and reject requests are children of the handler span (the SDK propagated it);
    // each settlement is a child of its message's send even so (the stored context).
    for (const settled of [...byName(inTrace, 'POST /api/v1/messaging/acknowledge'), ...byName(inTrace, 'POST /api/v1/messaging/reject')]) {
      expect(processed.map(idOf)).toContain(parentOf(settled));
    }
    for (const settle of settles) expect(sends.map(idOf)).toContain(parentOf(settle));

    // The first invocation starts in the run's span; the retried one in the run timer's
    // (resume_workflow, parented to the run's stored context); the second step after the first's ack.
    const [firstTry, retry, second] = [...invocations].sort(
      (a, b) => (a.startTime[0] - b.startTime[0]) * 1e9 + (a.startTime[1] - b.startTime[1]),
    );
    expect(parentOf(firstTry!)).toBe(idOf(workflow!));
    const [resume] = inTrace.filter((s) => s.name.startsWith('resume_workflow '));
    expect(resume).toBeDefined();
    expect(parentOf(resume!)).toBe(idOf(workflow!));
    expect(parentOf(retry!)).toBe(idOf(resume!));
    const acks = settles.filter((s) => s.attributes['messaging.operation.name'] === 'ack');
    expect(acks.map(idOf)).toContain(parentOf(second!));
    expect(retry!.attributes['switchboard.step.attempt']).toBe(2);
    // PostgreSQL's queries are spans of the requests that made them (the pg instrumentation).
    if (dialect === 'postgres') {
      const queries = inTrace.filter((s) => (s.attributes['db.system.name'] ?? s.attributes['db.system']) === 'postgresql');
      expect(queries.length).toBeGreaterThan(0);
    }
  });

  it('honours a traceparent header on send and hands the send’s context to the receiver', async () => {
    const receiver = await server.agent(`plain-${dialect}`);
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const sent = await server.api.post(
      '/api/v1/messaging/send',
      { destination: `plain-${dialect}`, event_name: 'hello', payload: {} },
      { headers: { traceparent } },
    );
    expect(sent.status).toBe(201);
    const received = await receiver.get(`/api/v1/messaging/receive?agent_id=plain-${dialect}&timeout=1`);
    const [message] = received.body.data.messages;
    // Traced here: the send span is a child of the request, itself the header's child.
    expect(message.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/);
    const send = exporter.getFinishedSpans().find((s) => s.name === `send plain-${dialect}` && messageOf(s) === message.message_id)!;
    expect(message.traceparent).toBe(`00-${send.spanContext().traceId}-${idOf(send)}-01`);
  });

  it('records nothing of a trace its caller did not sample, and hands that trace on to the receiver, unsampled', async () => {
    const receiver = await server.agent(`unsampled-${dialect}`);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const headers = { traceparent: `00-${traceId}-00f067aa0ba902b7-00` };
    const sent = await server.api.post(
      '/api/v1/messaging/send',
      { destination: `unsampled-${dialect}`, event_name: 'quiet', payload: {} },
      { headers },
    );
    expect(sent.status).toBe(201);
    const received = await receiver.get(`/api/v1/messaging/receive?agent_id=unsampled-${dialect}&timeout=1`, { headers });
    const [message] = received.body.data.messages;
    expect(message.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-00$`));
    const acked = await receiver.post('/api/v1/messaging/acknowledge', { message_ids: [message.message_id] }, { headers });
    expect(acked.status).toBe(200);
    expect(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId)).toEqual([]);
  });

  it('records one send span for a batch, whose context every message of it carries', async () => {
    const [a, b] = [`batch-a-${dialect}`, `batch-b-${dialect}`];
    const receivers = [await server.agent(a), await server.agent(b)];
    exporter.reset();
    const sent = await server.api.post('/api/v1/messaging/send-batch', {
      messages: [a, b, a].map((destination) => ({ destination, event_name: 'batched', payload: {} })),
    });
    expect(sent.status).toBe(201);
    const sends = exporter.getFinishedSpans().filter((s) => s.name.startsWith('send'));
    // Two destinations: the span is named after the operation alone.
    expect(sends.map((s) => [s.name, s.attributes['messaging.batch.message_count']])).toEqual([['send', 3]]);
    const request = byName(exporter.getFinishedSpans(), 'POST /api/v1/messaging/send-batch')[0]!;
    expect(parentOf(sends[0]!)).toBe(idOf(request));
    const context = `00-${sends[0]!.spanContext().traceId}-${idOf(sends[0]!)}-01`;
    const received = await Promise.all(
      receivers.map(
        async (receiver, i) => (await receiver.get(`/api/v1/messaging/receive?agent_id=${[a, b][i]}&max=10&timeout=1`)).body.data.messages,
      ),
    );
    expect(received.flat().map((m: { traceparent: string }) => m.traceparent)).toEqual([context, context, context]);
  });

  it('traces routine fires, webhook deliveries, and a redriven dead letter in its first trace', async () => {
    const target = `fired-${dialect}`;
    const receiver = await server.agent(target);
    const routine = await server.api.post('/core/api/v1/routines', {
      name: `traced ${dialect}`,
      trigger_type: 'cron',
      cron_expression: '* * * * * *',
      target_agent: target,
    });
    expect(routine.status).toBe(201);
    const webhook = await server.api.post('/api/v1/webhooks', { url: 'http://127.0.0.1:9/hook', types: ['routine.execution.*'] });
    expect(webhook.status).toBe(201);
    const received = await waitFor(
      async () => (await receiver.get(`/api/v1/messaging/receive?agent_id=${target}&timeout=2`)).body.data.messages[0],
      10_000,
    );
    await server.api.patch(`/core/api/v1/routines/${routine.body.data.id}`, { enabled: false });
    const fire = await waitFor(() => exporter.getFinishedSpans().find((s) => s.name === `fire_routine ${routine.body.data.id}`), 5_000);
    const send = exporter.getFinishedSpans().find((s) => s.name === `send ${target}` && messageOf(s) === received.message_id)!;
    expect(parentOf(send)).toBe(idOf(fire));
    expect(received.traceparent).toBe(`00-${send.spanContext().traceId}-${idOf(send)}-01`);

    // Rejected for good, redriven: the copy goes on in the dead letter's trace.
    expect(
      (await receiver.post('/api/v1/messaging/reject', { message_id: received.message_id, reason: 'no', requeue: false })).status,
    ).toBe(200);
    await waitFor(() => exporter.getFinishedSpans().some((s) => s.name.startsWith('deliver_webhook ')) || undefined, 15_000);
    const redriven = await server.api.post(`/api/v1/messaging/dead-letters/${received.message_id}/redrive`, {});
    expect(redriven.status, redriven.text).toBe(201);
    const again = await waitFor(
      async () =>
        (await receiver.get(`/api/v1/messaging/receive?agent_id=${target}&timeout=2`)).body.data.messages.find(
          (m: { redriven_from?: string }) => m.redriven_from === received.message_id,
        ),
      10_000,
    );
    expect(again.traceparent.split('-')[1]).toBe(send.spanContext().traceId);
    const delivery = exporter.getFinishedSpans().find((s) => s.name === `deliver_webhook ${webhook.body.data.id}`);
    expect(delivery).toBeDefined();
  });
});
