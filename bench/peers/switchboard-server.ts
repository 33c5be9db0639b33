/**
 * The Switchboard server both Switchboard adapters (HTTP long poll, agent channel) run against:
 * `dist/cli.js serve` on a fresh database of the dialect, agent keys, and the processes its CPU
 * is charged to (the server, plus on PostgreSQL the backends of its database, the WAL writer and
 * the checkpointer).
 */
import { postgresTestUrl } from '../../test/helpers/database.js';
import { startSwitchboard, type SwitchboardProcess } from '../lib.js';
import { call } from '../messaging.js';
import { databaseOf, postgresPids, postgresUnavailable, type PeerQueue, type ProcessGroup } from './system.js';

export type SwitchboardDialect = 'sqlite' | 'postgres';

/** Flow control in use on every message: a priority varying over 0–9 and an ordering key of FLOW_KEYS per queue. */
export const FLOW_KEYS = 1000;

export interface SwitchboardServer {
  /** Why it cannot start here (PostgreSQL not configured or down), or undefined once it runs. */
  start(): Promise<string | undefined>;
  readonly process: SwitchboardProcess;
  /** A new API key for `agentId`. */
  agentKey(agentId: string): Promise<string>;
  /** A queue's keys: its producer's send over HTTP (one message, or `send-batch` for several), and its consumer's key. */
  queueClients(name: string): Promise<{ url: string; consumerKey: string; send: PeerQueue['send'] }>;
  processes(): Promise<ProcessGroup[]>;
  stop(): Promise<void>;
}

/** `flow`: the producers' messages carry a priority and an ordering key (the flow control variant of the rows). */
export function switchboardServer(dialect: SwitchboardDialect, flow = false): SwitchboardServer {
  let server: SwitchboardProcess | undefined;
  return {
    async start() {
      const reason = dialect === 'postgres' ? await postgresUnavailable() : undefined;
      if (reason) return reason;
      server = await startSwitchboard({ dialect });
      return undefined;
    },
    get process() {
      if (!server) throw new Error('the Switchboard server is not started');
      return server;
    },
    async agentKey(agentId) {
      const res = ok(
        `a key for ${agentId}`,
        await call(`${this.process.url}/api/v1/auth/keys`, 'POST', this.process.adminKey, { agent_id: agentId }),
      );
      return res.json.data.key as string;
    },
    async queueClients(name) {
      const url = this.process.url;
      const producerKey = await this.agentKey(`${name}-producer`);
      let sent = 0;
      const send: PeerQueue['send'] = async (payloads) => {
        const messages = payloads.map((p) => ({
          destination: name,
          event_name: 'peers',
          payload: { p },
          ...(flow ? { priority: Math.floor(Math.random() * 10), ordering_key: `key-${sent++ % FLOW_KEYS}` } : {}),
        }));
        if (messages.length === 1) ok('send', await call(`${url}/api/v1/messaging/send`, 'POST', producerKey, messages[0]));
        else ok('send-batch', await call(`${url}/api/v1/messaging/send-batch`, 'POST', producerKey, { messages }));
      };
      return { url, consumerKey: await this.agentKey(name), send };
    },
    async processes() {
      const node = { label: 'node', pids: [this.process.pid] };
      const url = this.process.database.databaseUrl;
      return url ? [node, { label: 'postgres', pids: await postgresPids(postgresTestUrl()!, databaseOf(url)) }] : [node];
    },
    async stop() {
      await server?.stop();
      server = undefined;
    },
  };
}

/** Throws with the envelope's error when a call did not succeed. */
export function ok<T extends { status: number; json: unknown }>(what: string, res: T): T {
  if (res.status >= 300) throw new Error(`${what}: HTTP ${res.status} ${JSON.stringify(res.json)}`);
  return res;
}
