/**
 * Switchboard over the agent channel (one WebSocket per agent, GET /api/v1/messaging/channel).
 * Producers use the SDK's channel (`client.channel({ agentId })` → `send` / `sendBatch`, each
 * resolving on the server's answer); consumers speak the raw protocol, which is what this
 * measures: `{"credit":n}` grants n more deliveries, `{"message":{…}}` is one, and the ids
 * delivered in one event-loop tick go back in one `{"id":k,"ack":[…]}` with as much new credit.
 * A server without the channel (404 on upgrade) is skipped. `withUsage`: every ack carries a
 * usage report (a model call's tokens and cost), recorded in the ack's transaction.
 */
import WebSocket from 'ws';
import { Switchboard } from '../../src/client/index.js';
import { switchboardServer, type SwitchboardDialect } from './switchboard-server.js';
import { sentAtOf, type PeerSystem } from './system.js';

/** Deliveries a consumer has outstanding at most: the receive max of the HTTP consumer. */
const CREDIT = 100;

/** Opens the raw channel socket of `agentId`; resolves the HTTP status when the upgrade is refused. */
function openSocket(url: string, agentId: string, key: string): Promise<WebSocket | number> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/api/v1/messaging/channel?agent_id=${encodeURIComponent(agentId)}`, {
    headers: { authorization: `Bearer ${key}` },
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('error', reject);
  });
}

/** What each ack reports when the system acks with usage. */
const USAGE = { model: 'bench-model', provider: 'bench', input_tokens: 812, output_tokens: 164, cost_usd: 0.0031 };

export function switchboardChannel(dialect: SwitchboardDialect, withUsage = false): PeerSystem {
  const server = switchboardServer(dialect);
  return {
    name: `Switchboard, agent channel, ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}${withUsage ? ', acks with usage' : ''}`,
    async setup() {
      const reason = await server.start();
      if (reason) return reason;
      const probe = await openSocket(server.process.url, 'peers-probe', await server.agentKey('peers-probe'));
      if (typeof probe === 'number') return `the channel route is absent (HTTP ${probe} on upgrade of /api/v1/messaging/channel)`;
      probe.close();
      return undefined;
    },
    async queue(name) {
      const { url } = server.process;
      const producerId = `${name}-producer`;
      const client = new Switchboard({ url, apiKey: await server.agentKey(producerId) });
      const channel = await client.channel({ agentId: producerId });
      const consumerKey = await server.agentKey(name);
      return {
        async send(payloads) {
          const messages = payloads.map((p) => ({ destination: name, event_name: 'peers', payload: { p } }));
          if (messages.length === 1) await channel.send(messages[0]!);
          else await channel.sendBatch({ messages });
        },
        async consume(onMessage) {
          const socket = await openSocket(url, name, consumerKey);
          if (typeof socket === 'number') throw new Error(`channel upgrade refused: HTTP ${socket}`);
          let acks: (string | { message_id: string; usage: typeof USAGE })[] = [];
          let nextId = 1;
          let failure: unknown;
          socket.on('error', (error) => (failure ??= error));
          const flush = () => {
            if (acks.length === 0 || socket.readyState !== WebSocket.OPEN) return;
            socket.send(JSON.stringify({ id: nextId++, ack: acks }));
            socket.send(JSON.stringify({ credit: acks.length }));
            acks = [];
          };
          socket.on('message', (data: Buffer) => {
            const frame = JSON.parse(data.toString()) as {
              message?: { message_id: string; payload: { p: string } };
              error?: unknown;
              ok?: { failed?: unknown[] };
            };
            if (frame.message) {
              onMessage(sentAtOf(frame.message.payload.p));
              const id = frame.message.message_id;
              if (acks.push(withUsage ? { message_id: id, usage: USAGE } : id) === 1) setImmediate(flush);
            } else if (frame.error) {
              failure ??= frame.error;
            } else if (frame.ok?.failed?.length) {
              // An ack that did not settle: the message would come back and be counted twice.
              failure ??= frame.ok.failed;
            }
          });
          socket.send(JSON.stringify({ credit: CREDIT }));
          return async () => {
            flush();
            if (socket.readyState !== WebSocket.CLOSED) {
              const closed = new Promise((resolve) => socket.once('close', resolve));
              socket.close();
              await closed;
            }
            if (failure) throw new Error(`the channel answered an error: ${JSON.stringify(failure)}`);
          };
        },
        close: async () => {
          await channel.close();
        },
      };
    },
    brokerProcesses: () => server.processes(),
    teardown: () => server.stop(),
  };
}
