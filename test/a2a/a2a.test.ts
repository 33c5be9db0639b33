import { randomUUID } from 'node:crypto';
import { AgentCard, Message, SendMessageRequest, TaskState, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { expect, it } from 'vitest';
import { receiveOne, runAgent, acknowledge } from '../helpers/agent.js';
import type { Api } from '../helpers/api.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer, type TestServer } from '../helpers/server.js';

/** A fetch that sends `key` as a Bearer API key (what an A2A client's auth handler would do). */
function bearerFetch(key: string): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
}

/** The A2A SDK's client for an agent, built from its card (fetched with `key`). */
async function a2aClient(server: TestServer, agentId: string, key: string): Promise<Client> {
  const fetchImpl = bearerFetch(key);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromUrl(`${server.url}/a2a/${agentId}/`);
}

function requestJson(text: string, options: { returnImmediately?: boolean } = {}) {
  return {
    message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }] },
    configuration: { returnImmediately: options.returnImmediately ?? false },
  };
}

function request(text: string, options: { returnImmediately?: boolean } = {}): SendMessageRequest {
  return SendMessageRequest.fromJSON(requestJson(text, options));
}

/** Registers `capabilities` for the agent (in group `team`) and returns its key's client. */
async function registered(server: TestServer, agentId: string, capabilities: string[]): Promise<Api> {
  const agent = await server.agent(agentId);
  for (const capability of capabilities) {
    const res = await agent.post('/api/v1/discovery/capabilities', {
      agent_id: agentId,
      capability,
      metadata: { description: `does ${capability}` },
      groups: ['team'],
    });
    expect(res.status).toBe(201);
  }
  return agent;
}

/** Registers one capability with a description of its own. */
async function registeredWith(server: TestServer, agentId: string, capability: string, description: string): Promise<Api> {
  const agent = await server.agent(agentId);
  const res = await agent.post('/api/v1/discovery/capabilities', { agent_id: agentId, capability, metadata: { description } });
  expect(res.status).toBe(201);
  return agent;
}

/** A JSON-RPC call to an agent's endpoint (`agentId` empty: the server's own). */
async function rpc(
  server: TestServer,
  agentId: string,
  body: string,
  key: string | null = server.adminKey,
  contentType = 'application/json',
) {
  const headers: Record<string, string> = { 'content-type': contentType };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  const res = await fetch(agentId === '' ? `${server.url}/a2a` : `${server.url}/a2a/${agentId}`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as any };
}

function textOf(task: Task): string | undefined {
  const part = task.artifacts[0]?.parts[0]?.content;
  return part?.$case === 'text' ? part.value : undefined;
}

describeEachDialect('A2A', (dialect) => {
  const server = useServer(dialect);
  let n = 0;
  const agentName = () => `a2a-${dialect}-${++n}-${randomUUID().slice(0, 6)}`;

  it("serves a public server card and, with a key, each agent's card with its capabilities as skills", async () => {
    const id = agentName();
    const agent = await registered(server, id, ['summarize', 'translate']);
    const resolver = new DefaultAgentCardResolver({ fetchImpl: bearerFetch(agent.key!) });

    const plain = await fetch(`${server.url}/.well-known/agent-card.json`);
    expect(plain.status).toBe(200);
    const serverCard = await new DefaultAgentCardResolver().resolve(`${server.url}/`);
    expect(serverCard.name).toBe('Switchboard');
    expect(serverCard.description).toContain('/a2a/{agent_id}/.well-known/agent-card.json');
    // A2A 1.0 requires an interface: the server's own endpoint, which routes through discovery.
    expect(serverCard.supportedInterfaces).toEqual([
      { url: `${server.url}/a2a`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    ]);
    // Every registered capability is a skill; which agents offer it is not told.
    expect(serverCard.skills.filter((skill) => skill.id === 'summarize' || skill.id === 'translate')).toEqual([
      expect.objectContaining({ id: 'summarize', name: 'summarize', description: 'does summarize', tags: ['summarize'] }),
      expect.objectContaining({ id: 'translate', name: 'translate', description: 'does translate', tags: ['translate'] }),
    ]);
    expect(JSON.stringify(serverCard)).not.toContain(id);
    expect(await plain.json()).toEqual(
      AgentCard.toJSON(AgentCard.fromJSON(await (await fetch(`${server.url}/.well-known/agent-card.json`)).json())),
    );

    const card = await resolver.resolve(`${server.url}/a2a/${id}/`);
    expect(card.name).toBe(id);
    expect(card.skills.map((s) => s.id).sort()).toEqual(['summarize', 'translate']);
    expect(card.skills[0]!.tags).toContain('group:team');
    expect(card.description).toContain('team');
    expect(card.supportedInterfaces[0]).toMatchObject({
      url: `${server.url}/a2a/${id}`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(card.capabilities?.streaming).toBe(true);
    expect(card.securitySchemes.bearer?.scheme).toMatchObject({ $case: 'httpAuthSecurityScheme', value: { scheme: 'Bearer' } });
    // The wire form is A2A's JSON (what AgentCard.toJSON writes).
    const raw = await (
      await fetch(`${server.url}/a2a/${id}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${agent.key}` } })
    ).json();
    expect(raw).toEqual(AgentCard.toJSON(card));

    // The agent's card needs a key; an agent nobody registered has none.
    expect((await fetch(`${server.url}/a2a/${id}/.well-known/agent-card.json`)).status).toBe(401);
    expect(
      (
        await fetch(`${server.url}/a2a/nobody-${id}/.well-known/agent-card.json`, {
          headers: { authorization: `Bearer ${server.adminKey}` },
        })
      ).status,
    ).toBe(404);
  });

  it("a message becomes an inbox message; the agent's acknowledgement completes the task with its output", async () => {
    const id = agentName();
    const agent = await registered(server, id, ['echo']);
    const worker = runAgent(agent, id, (message) => ({ output: `echo: ${message.payload.message.parts[0].text}` }));
    try {
      const caller = await server.agent(`${id}-caller`);
      const client = await a2aClient(server, id, caller.key!);
      const result = (await client.sendMessage(request('hello'))) as Task;
      expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(result)).toBe('echo: hello');

      const [seen] = worker.handled;
      expect(seen).toMatchObject({ source: `${id}-caller`, destination: id, event_name: 'a2a.message' });
      expect(seen!.payload).toMatchObject({
        task_id: result.id,
        context_id: result.contextId,
        message: { role: 'ROLE_USER', parts: [{ text: 'hello' }] },
      });

      const again = await client.getTask({ tenant: '', id: result.id });
      expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(again)).toBe('echo: hello');
      expect(again.history[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'hello' });
      // A settled task is not cancelable.
      await expect(client.cancelTask({ tenant: '', id: result.id, metadata: undefined })).rejects.toThrow(/not.*cancel|settled/i);
    } finally {
      await worker.stop();
    }
  });

  it('a JSON output is a data part; a permanent rejection fails the task with its reason', async () => {
    const id = agentName();
    const agent = await registered(server, id, ['judge']);
    const worker = runAgent(agent, id, (message) =>
      message.payload.message.parts[0].text === 'bad' ? { reject: 'cannot judge this', requeue: false } : { output: { verdict: 'fine' } },
    );
    try {
      const client = await a2aClient(server, id, server.adminKey);
      const good = (await client.sendMessage(request('good'))) as Task;
      expect(good.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(good.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'data', value: { verdict: 'fine' } });

      const bad = (await client.sendMessage(request('bad'))) as Task;
      expect(bad.status?.state).toBe(TaskState.TASK_STATE_FAILED);
      const reason = bad.status?.message?.parts[0]?.content;
      expect(reason?.$case === 'text' && reason.value).toContain('cannot judge this');
      expect(bad.artifacts).toEqual([]);
    } finally {
      await worker.stop();
    }
  });

  it('a task is submitted, then working once delivered; CancelTask withdraws its message', async () => {
    const id = agentName();
    const agent = await registered(server, id, ['slow']);
    const client = await a2aClient(server, id, server.adminKey);

    const pending = (await client.sendMessage(request('wait', { returnImmediately: true }))) as Task;
    expect(pending.status?.state).toBe(TaskState.TASK_STATE_SUBMITTED);
    const canceled = await client.cancelTask({ tenant: '', id: pending.id, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);

    const leased = (await client.sendMessage(request('lease me', { returnImmediately: true }))) as Task;
    const message = await receiveOne(agent, id);
    // The canceled task's message left the inbox: the next one received is the second task's.
    expect(message.payload.task_id).toBe(leased.id);
    expect((await client.getTask({ tenant: '', id: leased.id })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect((await client.cancelTask({ tenant: '', id: leased.id, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The agent can no longer acknowledge a withdrawn message, and the task stays canceled.
    await expect(acknowledge(agent, message.message_id, 'late')).rejects.toThrow(/409/);
    expect((await client.getTask({ tenant: '', id: leased.id })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('streams a task: the task, working, the output, completed; resubscribing to a settled task ends at once', async () => {
    const id = agentName();
    const agent = await registered(server, id, ['stream']);
    const client = await a2aClient(server, id, server.adminKey);

    const events: StreamResponse[] = [];
    const stream = client.sendMessageStream(request('streamed'));
    const first = await stream.next();
    events.push(first.value as StreamResponse);
    expect(first.value?.payload?.$case).toBe('task');
    // The agent works only once the stream is open, so every state is seen on it.
    const message = await receiveOne(agent, id);
    const second = await stream.next();
    events.push(second.value as StreamResponse);
    await acknowledge(agent, message.message_id, 'streamed result');
    for await (const event of stream) events.push(event);

    const states = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [e.payload.value.status?.state] : []));
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]);
    const artifact = events.find((e) => e.payload?.$case === 'artifactUpdate');
    expect(artifact?.payload?.$case === 'artifactUpdate' && artifact.payload.value.artifact?.parts[0]?.content).toEqual({
      $case: 'text',
      value: 'streamed result',
    });

    const taskId = first.value?.payload?.$case === 'task' ? first.value.payload.value.id : '';
    const replay: StreamResponse[] = [];
    for await (const event of client.resubscribeTask({ tenant: '', id: taskId })) replay.push(event);
    expect(replay).toHaveLength(1);
    expect(replay[0]?.payload?.$case === 'task' && replay[0].payload.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('agents act only as themselves: a task is seen by its requester, its agent and admins only', async () => {
    const id = agentName();
    const target = await registered(server, id, ['private']);
    const requester = await server.agent(`${id}-req`);
    const stranger = await server.agent(`${id}-stranger`);
    const task = (await (await a2aClient(server, id, requester.key!)).sendMessage(request('mine', { returnImmediately: true }))) as Task;
    const getTask = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: task.id } });

    const byStranger = await rpc(server, id, getTask, stranger.key);
    expect(byStranger.status).toBe(200);
    expect(byStranger.body.error.code).toBe(-32001);
    expect((await rpc(server, id, getTask, target.key)).body.result.id).toBe(task.id);
    expect((await rpc(server, id, getTask, server.adminKey)).body.result.id).toBe(task.id);
    // Only through the agent it was sent to.
    expect((await rpc(server, `${id}-req`, getTask, requester.key)).body.error.code).toBe(-32001);

    // The receiving agent settles through its inbox, not by canceling; a stranger cannot either.
    const cancel = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'CancelTask', params: { id: task.id } });
    expect((await rpc(server, id, cancel, target.key)).body.error.code).toBe(-32002);
    expect((await rpc(server, id, cancel, stranger.key)).body.error.code).toBe(-32001);
    expect((await rpc(server, id, cancel, requester.key)).body.result.status.state).toBe('TASK_STATE_CANCELED');
  });

  it("routes a message sent to the server's own endpoint to a healthy agent by skill, or by its text, and the task follows that agent", async () => {
    const [skilled, translator] = [agentName(), agentName()];
    const skill = `front-door-${skilled}`;
    const workers = [
      runAgent(await registered(server, skilled, [skill]), skilled, () => ({ output: `done by ${skilled}` })),
      runAgent(
        await registeredWith(server, translator, 'translate-french', 'Translates letters written in French into English'),
        translator,
        () => ({
          output: `translated by ${translator}`,
        }),
      ),
    ];
    try {
      const caller = await server.agent(`${skilled}-caller`);
      const fetchImpl = bearerFetch(caller.key!);
      const factory = new ClientFactory(
        ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
          transports: [new JsonRpcTransportFactory({ fetchImpl })],
          cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
        }),
      );
      // The official client, from the server's own card.
      const client = await factory.createFromUrl(`${server.url}/`);
      const bySkill = (await client.sendMessage(
        SendMessageRequest.fromJSON({ ...requestJson('anything'), metadata: { skill, strategy: 'least_loaded' } }),
      )) as Task;
      expect(bySkill.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(bySkill)).toBe(`done by ${skilled}`);
      expect(bySkill.metadata).toMatchObject({ agent_id: skilled });
      const byText = (await client.sendMessage(request('Please translate this French letter for me'))) as Task;
      expect(textOf(byText)).toBe(`translated by ${translator}`);
      expect(byText.metadata).toMatchObject({ agent_id: translator });
      // The task is reached through the server's endpoint, and through its agent's.
      expect((await client.getTask({ tenant: '', id: byText.id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const getTask = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: byText.id } });
      expect((await rpc(server, translator, getTask, caller.key)).body.result.id).toBe(byText.id);

      const send = (params: Record<string, unknown>) =>
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: requestJson('x').message, ...params } });
      const noSkill = await rpc(server, '', send({ metadata: { skill: `nobody-offers-${skilled}` } }), caller.key);
      expect(noSkill.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/healthy agent with skill/) });
      expect((await rpc(server, '', send({ metadata: { skill, strategy: 'no-such-strategy' } }), caller.key)).body.error.code).toBe(-32602);
      expect((await rpc(server, '', send({ metadata: { skill: 7 } }), caller.key)).body.error.code).toBe(-32602);
      expect((await rpc(server, '', send({}), null)).status).toBe(401);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  });

  it('refuses calls without a key (401) and answers bad JSON-RPC with JSON-RPC errors, never a 500', async () => {
    const id = agentName();
    await registered(server, id, ['strict']);
    const send = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'SendMessage',
      params: { message: Message.toJSON(request('x').message!) },
    });
    expect((await rpc(server, id, send, null)).status).toBe(401);
    expect((await rpc(server, id, send, 'sk_not_a_key')).status).toBe(401);

    const cases: [string, number][] = [
      ['{not json', -32700],
      ['[1, 2]', -32600],
      // The SDK's transport tells a request that is not JSON-RPC 2.0 as A2A's malformed request.
      [JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'GetTask', params: { id: 'x' } }), -32602],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'NoSuchMethod', params: {} }), -32601],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: 'x' }), -32602],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'no-such-task' } }), -32001],
      [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }), -32602],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { role: 'ROLE_USER', parts: [{ text: 'no id' }] } },
        }),
        -32602,
      ],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_AGENT', parts: [{ text: 'a' }] } },
        }),
        -32602,
      ],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', taskId: 't', parts: [{ text: 'a' }] } },
        }),
        -32004,
      ],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a\u0000b' }] } },
        }),
        -32602,
      ],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'SendMessage',
          params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'a\ud800b' }] } },
        }),
        -32602,
      ],
      [`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":${'['.repeat(100)}${']'.repeat(100)}}`, -32600],
      [
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'CreateTaskPushNotificationConfig',
          params: { taskId: 'x', url: 'http://127.0.0.1:9/' },
        }),
        -32003,
      ],
    ];
    for (const [body, code] of cases) {
      const res = await rpc(server, id, body);
      expect(res.status, body).toBe(200);
      expect(res.body.jsonrpc).toBe('2.0');
      expect(res.body.error.code, body).toBe(code);
    }
    // A text body gets the same guards as a JSON one.
    const deep = `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":${'['.repeat(100)}${']'.repeat(100)}}`;
    expect((await rpc(server, id, deep, server.adminKey, 'text/plain')).body.error.code).toBe(-32600);
    expect((await rpc(server, id, '', server.adminKey)).body.error.code).toBe(-32700);
    // A message to an agent nobody registered is refused the same way.
    expect((await rpc(server, `nobody-${id}`, send)).body.error.code).toBe(-32602);
  });
});
