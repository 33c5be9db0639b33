import { expect, it, vi } from 'vitest';
import { createAgent, PermanentError, Switchboard, type Message } from '../../src/client/index.js';
import { main as approvalPlan } from '../../examples/approval-plan.js';
import { signingClient } from '../../examples/connect.js';
import { main as echoAgent } from '../../examples/echo-agent.js';
import { main as summarizer } from '../../examples/summarizer-agent.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

/** A latch the test opens: handlers wait on it instead of sleeping. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** The routine execution a `routine.execute` message is for. */
const executionOf = (message: Message) => (message.payload as { execution_id: string }).execution_id;

describeEachDialect('createAgent and the examples', (dialect) => {
  const server = useServer(dialect);
  const admin = () => new Switchboard({ url: server.url, apiKey: server.adminKey });
  const webhookRoutine = (target: string) =>
    admin().routines.create({ body: { name: `for ${target}`, trigger_type: 'webhook', target_agent: target } });

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
      expect(example.routine).toMatchObject({ trigger_type: 'cron', cron_expression: '* * * * *', target_agent: 'summarizer' });
      // The cron fires every minute; triggering now runs the same path without the wait.
      const triggered = [
        await client.routines.trigger({ path: { id: example.routine.id } }),
        await client.routines.trigger({ path: { id: example.routine.id } }),
      ];
      for (const { id } of triggered) {
        const execution = await waitFor(async () => {
          const current = await client.routines.getExecution({ path: { id } });
          return current.status === 'success' ? current : undefined;
        }, 10_000);
        expect(execution.output).toEqual({ summary: 'Switchboard routes work to agents.', words: 9 });
      }
    } finally {
      await example.stop();
    }
  }, 20_000);

  it('the plan example completes after an approval through the SDK', async () => {
    const client = admin();
    const example = await approvalPlan(client, `plan-${dialect}`);
    try {
      const runId = example.run.id;
      const waiting = await waitFor(async () => {
        const run = await client.coordination.getRun({ path: { run_id: runId } });
        return run.status === 'waiting' ? run : undefined;
      }, 10_000);
      expect(waiting.steps.find((s) => s.id === 'research')).toMatchObject({ status: 'completed' });
      expect(waiting.steps.find((s) => s.id === 'write')).toMatchObject({ status: 'pending' });
      await client.coordination.approveStep({ path: { run_id: runId, step_id: 'review' }, body: { approved: true } });
      const run = await waitFor(async () => {
        const current = await client.coordination.getRun({ path: { run_id: runId } });
        return current.status === 'completed' ? current : undefined;
      }, 10_000);
      expect(run.steps.find((s) => s.id === 'write')?.output).toEqual({ draft: 'On agents: agents matters; agents is hard.' });
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
      throw new Error(`boom ${message.retry_count}`);
    });
    await agent.start();
    try {
      const sent = await admin().messaging.send({ body: { destination: 'thrower', event_name: 'work', max_deliveries: 3 } });
      const dead = await waitFor(async () => {
        const letters = await admin().messaging.listDeadLetters({ query: { agent_id: 'thrower' } });
        return letters.find((d) => d.message_id === sent.message_id);
      }, 20_000);
      expect(attempts).toEqual([0, 1, 2]);
      expect(dead.reason).toContain('boom 2');
      expect(dead.attempts.map((a) => a.reason)).toEqual(['boom 0', 'boom 1', 'boom 2']);
    } finally {
      await agent.stop();
    }
  }, 30_000);

  it('a PermanentError, or a message without a handler, is dead-lettered at once', async () => {
    const client = await signingClient(admin(), 'permanent');
    const attempts: string[] = [];
    const agent = createAgent({ client, agentId: 'permanent', heartbeatIntervalMs: 0, pollTimeoutSeconds: 1 });
    agent.on('invalid', (message) => {
      attempts.push(message.message_id);
      throw new PermanentError('cannot be done');
    });
    await agent.start();
    try {
      const invalid = await admin().messaging.send({ body: { destination: 'permanent', event_name: 'invalid' } });
      const unknown = await admin().messaging.send({ body: { destination: 'permanent', event_name: 'unknown.event' } });
      const letters = await waitFor(async () => {
        const all = await admin().messaging.listDeadLetters({ query: { agent_id: 'permanent' } });
        return all.length === 2 ? all : undefined;
      }, 10_000);
      expect(attempts).toEqual([invalid.message_id]);
      expect(letters.find((d) => d.message_id === invalid.message_id)).toMatchObject({ reason: 'cannot be done', retry_count: 0 });
      expect(letters.find((d) => d.message_id === unknown.message_id)?.reason).toContain("no handler for 'unknown.event'");
    } finally {
      await agent.stop();
    }
  }, 20_000);

  it('an agent approver decides its human steps with onApproval; without one the request is acknowledged, not dead-lettered', async () => {
    const client = admin();
    const decider = createAgent({
      client: await signingClient(client, 'approver-bot'),
      agentId: 'approver-bot',
      heartbeatIntervalMs: 0,
      pollTimeoutSeconds: 1,
    });
    const asked: string[] = [];
    decider.onApproval((request) => {
      asked.push(`${request.run_id}/${request.step_id}`);
      return request.prompt === 'Refund 5 EUR?' ? { approved: true, comment: 'small' } : 'reject';
    });
    const bystander = createAgent({
      client: await signingClient(client, 'bystander-bot'),
      agentId: 'bystander-bot',
      heartbeatIntervalMs: 0,
      pollTimeoutSeconds: 1,
    });
    bystander.on('work', () => 'done');
    await decider.start();
    await bystander.start();
    try {
      let plans = 0;
      const plan = (prompt: string, approvers: string[]) =>
        client.coordination.createPlan({
          body: { alias: `approver-plan-${++plans}`, steps: [{ id: 'gate', type: 'human_approval', prompt, approvers }] },
        });
      const small = await client.coordination.startRun({ body: { plan_id: (await plan('Refund 5 EUR?', ['approver-bot'])).id } });
      const large = await client.coordination.startRun({ body: { plan_id: (await plan('Refund 5,000 EUR?', ['approver-bot'])).id } });
      const left = await client.coordination.startRun({ body: { plan_id: (await plan('Ship it?', ['bystander-bot'])).id } });
      const settled = (runId: string, status: string) =>
        waitFor(async () => {
          const run = await client.coordination.getRun({ path: { run_id: runId } });
          return run.status === status ? run : undefined;
        }, 10_000);
      expect((await settled(small.id, 'completed')).steps[0]?.output).toMatchObject({
        approved: true,
        comment: 'small',
        decided_by: 'approver-bot',
      });
      expect((await settled(large.id, 'failed')).steps[0]?.output).toMatchObject({ approved: false, decided_by: 'approver-bot' });
      expect(asked.sort()).toEqual([`${large.id}/gate`, `${small.id}/gate`].sort());
      // The bystander has no onApproval: its request is acknowledged and the step waits for a person.
      await waitFor(async () => {
        const inbox = await client.messaging.listInboxes({ query: { agent_id: 'bystander-bot' } });
        return inbox[0]?.pending === 0 && inbox[0]?.leased === 0;
      }, 10_000);
      expect(await client.messaging.listDeadLetters({ query: { agent_id: 'bystander-bot' } })).toEqual([]);
      expect((await client.coordination.getRun({ path: { run_id: left.id } })).status).toBe('waiting');
    } finally {
      await decider.stop();
      await bystander.stop();
    }
  }, 30_000);

  it('a slow handler keeps its lease: the message is not delivered again while it runs', async () => {
    const client = await signingClient(admin(), 'slow');
    const extend = vi.spyOn(client.messaging, 'extend');
    const routine = await webhookRoutine('slow');
    const release = gate();
    const seen: Message[] = [];
    const agent = createAgent({
      client,
      agentId: 'slow',
      transport: 'poll',
      heartbeatIntervalMs: 0,
      pollTimeoutSeconds: 1,
      visibilityTimeoutSeconds: 3,
    });
    agent.on('routine.execute', async (message) => {
      seen.push(message);
      await release.opened;
      return { finished: true };
    });
    await agent.start();
    try {
      const execution = await admin().routines.trigger({ path: { id: routine.id } });
      await waitFor(() => seen.length === 1, 10_000);
      // Three extensions (one every 1.5 s) take the handler well past its first 3 s lease.
      await waitFor(() => extend.mock.calls.length >= 3, 15_000);
      expect(extend.mock.calls[0]![0]).toEqual({ body: { message_id: seen[0]!.message_id, visibility_timeout: 3 } });
      expect(await admin().messaging.receive({ query: { agent_id: 'slow', timeout: 0 } })).toEqual({ messages: [] });
      expect(await admin().routines.getExecution({ path: { id: execution.id } })).toMatchObject({ status: 'running' });
      release.open();
      const done = await waitFor(async () => {
        const current = await admin().routines.getExecution({ path: { id: execution.id } });
        return current.status === 'success' ? current : undefined;
      }, 10_000);
      expect(done.output).toEqual({ finished: true });
      expect(seen.map((m) => m.retry_count)).toEqual([0]);
    } finally {
      release.open();
      await agent.stop();
    }
  }, 40_000);

  it('stop() loses no message: what was received is acknowledged before it returns, the rest goes to the next worker', async () => {
    const client = await signingClient(admin(), 'stopper');
    const routine = await webhookRoutine('stopper');
    const release = gate();
    const seen: Message[] = [];
    const options = { client, agentId: 'stopper', heartbeatIntervalMs: 0, pollTimeoutSeconds: 1, concurrency: 3 };
    const handler = async (message: Message) => {
      seen.push(message);
      await release.opened;
      return { execution: executionOf(message) };
    };
    const first = createAgent(options).on('routine.execute', handler);
    await first.start();
    const executions: string[] = [];
    for (let i = 0; i < 10; i++)
      executions.push((await admin().routines.trigger({ path: { id: routine.id }, body: { payload: { i } } })).id);
    await waitFor(() => seen.length === 3, 10_000);
    expect(first.inFlight).toBe(3);

    const stopping = first.stop();
    release.open();
    await stopping;
    expect(first.inFlight).toBe(0);
    expect(seen.length).toBe(3);
    // Acknowledged before stop() returned: their executions have succeeded already.
    for (const message of seen) {
      expect(await admin().routines.getExecution({ path: { id: executionOf(message) } })).toMatchObject({
        status: 'success',
        output: { execution: executionOf(message) },
      });
    }

    const second = createAgent(options).on('routine.execute', handler);
    await second.start();
    try {
      await waitFor(async () => {
        const all = await admin().routines.listExecutions({ path: { id: routine.id } });
        return all.length === 10 && all.every((e) => e.status === 'success');
      }, 20_000);
    } finally {
      await second.stop();
    }
    // Each message handled exactly once, none delivered twice.
    expect(seen.map(executionOf).sort()).toEqual([...executions].sort());
    expect(seen.every((m) => m.retry_count === 0)).toBe(true);
  }, 40_000);

  it('stop() during a long poll handles what that poll returns', async () => {
    const client = await signingClient(admin(), 'late');
    const receive = vi.spyOn(client.messaging, 'receive');
    const routine = await webhookRoutine('late');
    const seen: Message[] = [];
    const agent = createAgent({ client, agentId: 'late', transport: 'poll', heartbeatIntervalMs: 0, pollTimeoutSeconds: 10 });
    agent.on('routine.execute', (message) => {
      seen.push(message);
      return 'handled';
    });
    await agent.start();
    await waitFor(() => receive.mock.calls.length === 1);
    const stopping = agent.stop();
    const execution = await admin().routines.trigger({ path: { id: routine.id } });
    await stopping;
    expect(seen.map(executionOf)).toEqual([execution.id]);
    expect(await admin().routines.getExecution({ path: { id: execution.id } })).toMatchObject({ status: 'success', output: 'handled' });
  }, 30_000);

  it('registers capabilities in its groups, subscribes to topics, heartbeats its load, routes by event name, deregisters only when asked', async () => {
    const client = await signingClient(admin(), 'router');
    const release = gate();
    const routed: Array<[string, string]> = [];
    const agent = createAgent({
      client,
      agentId: 'router',
      capabilities: ['text.route', { capability: 'text.other', metadata: { description: 'the other one' } }],
      groups: ['routers'],
      topics: ['orders.*', 'audit.>'],
      heartbeatIntervalMs: 100,
      concurrency: 2,
      pollTimeoutSeconds: 1,
    });
    const record = (name: string) => async (message: Message) => {
      routed.push([message.event_name, name]);
      if (message.event_name === 'hold') await release.opened;
    };
    agent.on('*', record('any')).on('orders.*', record('orders.*')).on('audit.>', record('audit.>')).on('orders.created', record('exact'));
    await agent.start();
    try {
      const capabilities = await admin().discovery.listCapabilities({ query: { agent_id: 'router' } });
      expect(capabilities.map((c) => [c.capability, c.groups, c.metadata]).sort()).toEqual([
        ['text.other', ['routers'], { description: 'the other one' }],
        ['text.route', ['routers'], {}],
      ]);
      expect((await admin().messaging.listSubscriptions({ query: { agent_id: 'router' } })).map((s) => s.topic).sort()).toEqual([
        'audit.>',
        'orders.*',
      ]);

      // One of two slots busy: the heartbeats report load 0.5.
      await admin().messaging.send({ body: { destination: 'router', event_name: 'hold' } });
      await waitFor(async () => (await admin().discovery.agentHealth({ path: { agent_id: 'router' } })).load === 0.5, 10_000);
      expect(await admin().discovery.agentHealth({ path: { agent_id: 'router' } })).toMatchObject({ status: 'healthy' });
      release.open();
      await waitFor(async () => (await admin().discovery.agentHealth({ path: { agent_id: 'router' } })).load === 0, 10_000);

      for (const topic of ['orders.created', 'orders.updated', 'audit.users.login']) {
        expect(await admin().messaging.publish({ body: { topic, payload: {} } })).toMatchObject({ count: 1 });
      }
      await waitFor(() => routed.length === 4, 10_000);
      expect(Object.fromEntries(routed)).toEqual({
        hold: 'any',
        'orders.created': 'exact',
        'orders.updated': 'orders.*',
        'audit.users.login': 'audit.>',
      });
    } finally {
      release.open();
      await agent.stop();
    }
    expect(await admin().discovery.listCapabilities({ query: { agent_id: 'router' } })).toHaveLength(2);

    await agent.start();
    await agent.stop({ deregister: true });
    expect(await admin().discovery.listCapabilities({ query: { agent_id: 'router' } })).toEqual([]);
    expect(await admin().messaging.listSubscriptions({ query: { agent_id: 'router' } })).toEqual([]);
  }, 40_000);

  it('runs at most `concurrency` handlers at once', async () => {
    const client = await signingClient(admin(), 'bounded');
    const release = gate();
    let running = 0;
    let most = 0;
    let handled = 0;
    const agent = createAgent({ client, agentId: 'bounded', heartbeatIntervalMs: 0, pollTimeoutSeconds: 1, concurrency: 2 });
    agent.on('job', async () => {
      running += 1;
      most = Math.max(most, running);
      await release.opened;
      running -= 1;
      handled += 1;
    });
    await agent.start();
    try {
      await admin().messaging.sendBatch({
        body: { messages: Array.from({ length: 6 }, (_, i) => ({ destination: 'bounded', event_name: 'job', payload: { i } })) },
      });
      await waitFor(() => running === 2, 10_000);
      expect(agent.inFlight).toBe(2);
      release.open();
      await waitFor(() => handled === 6, 10_000);
      expect(most).toBe(2);
    } finally {
      release.open();
      await agent.stop();
    }
  }, 30_000);

  it('logs a handler failure once per delivery with its id and reason, and a lost server once, then its return', async () => {
    const lines: string[] = [];
    const logger = {
      info: (line: string) => lines.push(`info ${line}`),
      warn: (line: string) => lines.push(`warn ${line}`),
      error: (line: string) => lines.push(`error ${line}`),
    };
    const key = await admin().auth.createKey({ body: { agent_id: 'logged', role: 'agent', name: 'logged agent' } });
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(server.url).port));
    let loopErrors = 0;
    const client = new Switchboard({ url: `http://127.0.0.1:${proxy.port}`, apiKey: key.key });
    const agent = createAgent({
      client,
      agentId: 'logged',
      transport: 'poll',
      heartbeatIntervalMs: 0,
      pollTimeoutSeconds: 1,
      logger,
      onError: () => loopErrors++,
    });
    agent.on('work', () => {
      throw new PermanentError('no such order');
    });
    await agent.start();
    try {
      const sent = await admin().messaging.send({ body: { destination: 'logged', event_name: 'work' } });
      await waitFor(async () => (await admin().messaging.listDeadLetters({ query: { agent_id: 'logged' } })).length === 1, 10_000);
      expect(lines).toEqual([`warn agent logged: message ${sent.message_id} (work, delivery 1) failed: no such order (permanent)`]);

      await proxy.cut();
      // The loop retries every second: three failures, one line.
      await waitFor(() => loopErrors >= 3, 10_000);
      expect(lines.slice(1)).toEqual([
        expect.stringMatching(/^error agent logged: cannot reach the server \(fetch failed: .+\); retrying$/),
      ]);
      await proxy.restore();
      await waitFor(() => lines.length === 3, 10_000);
      expect(lines[2]).toMatch(/^info agent logged: reached the server again after \d+ s$/);
    } finally {
      await agent.stop();
      await proxy.cut();
    }
  }, 30_000);
});
