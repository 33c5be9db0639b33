/**
 * Switchboard over its HTTP API, as bench/messaging.ts drives it: sends with one agent key
 * (POST /messaging/send, or /messaging/send-batch for a batch), and a consumer per destination
 * that long-polls `receive` (max=100, timeout=1) and acknowledges each batch at once.
 */
import { call } from '../messaging.js';
import { ok, switchboardServer, type SwitchboardDialect } from './switchboard-server.js';
import { sentAtOf, type PeerSystem } from './system.js';

/** `flow`: with a priority and an ordering key on every message (switchboard-server.ts), beside the row without. */
export function switchboardHttp(dialect: SwitchboardDialect, flow = false): PeerSystem {
  const server = switchboardServer(dialect, flow);
  return {
    name: `Switchboard, HTTP long poll, ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}${flow ? ', priority + ordering keys' : ''}`,
    setup: () => server.start(),
    async queue(name) {
      const { url, consumerKey, send } = await server.queueClients(name);
      return {
        send,
        async consume(onMessage) {
          let active = true;
          const loop = (async () => {
            while (active) {
              const res = ok(
                'receive',
                await call(`${url}/api/v1/messaging/receive?agent_id=${name}&max=100&timeout=1`, 'GET', consumerKey),
              );
              const messages = res.json.data.messages as { message_id: string; payload: { p: string } }[];
              if (messages.length === 0) continue;
              for (const message of messages) onMessage(sentAtOf(message.payload.p));
              ok(
                'acknowledge',
                await call(`${url}/api/v1/messaging/acknowledge`, 'POST', consumerKey, { message_ids: messages.map((m) => m.message_id) }),
              );
            }
          })();
          // A failure ends the loop and comes out of stop(), not as an unhandled rejection meanwhile.
          loop.catch(() => undefined);
          return async () => {
            active = false;
            await loop;
          };
        },
        close: async () => undefined,
      };
    },
    brokerProcesses: () => server.processes(),
    teardown: () => server.stop(),
  };
}
