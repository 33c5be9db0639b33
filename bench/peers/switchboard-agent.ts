/**
 * Switchboard's agent workers as the consumers, the SDKs' own loop rather than the bench's: the
 * TypeScript SDK's `createAgent` in the bench process, or the Python SDK's `Agent` in one python3
 * process per queue (standard library only), each long polling with 4 handlers at once and
 * acknowledging every message as its handler returns. The Python worker reports each message's
 * send stamp on its stdout, where the bench reads it; its CPU counts as client CPU. Producers send
 * over HTTP as in switchboard-http.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createAgent, Switchboard } from '../../src/client/index.js';
import { switchboardServer, type SwitchboardDialect } from './switchboard-server.js';
import { sentAtOf, type PeerSystem } from './system.js';

const CONCURRENCY = 4;
const POLL_SECONDS = 1;
/** A Python worker not gone this long after SIGTERM is killed. */
const STOP_MS = 10_000;
const PYTHON_SOURCE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../clients/python/src');

// Says "ready" once polling, so that its start-up (the interpreter, the imports) is not measured.
const PYTHON_WORKER = `
import os, signal, sys, threading
from switchboard import Agent, Switchboard
client = Switchboard(os.environ["SWITCHBOARD_URL"], api_key=os.environ["SWITCHBOARD_API_KEY"])
agent = Agent(client, os.environ["AGENT_ID"], concurrency=${CONCURRENCY}, poll_timeout=${POLL_SECONDS}, heartbeat_interval=0)
lock = threading.Lock()
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())

@agent.on("peers")
def handle(message):
    with lock:
        sys.stdout.write(message["payload"]["p"][:16] + "\\n")
        sys.stdout.flush()

agent.start()
print("ready", flush=True)
stopped.wait()
agent.stop()
`;
const READY = 'ready';

export type AgentLanguage = 'typescript' | 'python';

export function switchboardAgent(dialect: SwitchboardDialect, language: AgentLanguage): PeerSystem {
  const server = switchboardServer(dialect);
  const workers = new Set<ChildProcess>();
  return {
    name: `Switchboard, ${language === 'python' ? 'Python' : 'TypeScript'} agent worker, ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    setup: () => server.start(),
    async queue(name) {
      const { url, consumerKey, send } = await server.queueClients(name);
      return {
        send,
        async consume(onMessage) {
          if (language === 'typescript') {
            const client = new Switchboard({ url, apiKey: consumerKey });
            const agent = createAgent({
              client,
              agentId: name,
              concurrency: CONCURRENCY,
              pollTimeoutSeconds: POLL_SECONDS,
              heartbeatIntervalMs: 0,
              transport: 'poll',
            });
            agent.on('peers', async (message) => {
              onMessage(sentAtOf((message.payload as { p: string }).p));
            });
            await agent.start();
            return () => agent.stop();
          }
          const worker = spawn('python3', ['-c', PYTHON_WORKER], {
            env: { ...process.env, PYTHONPATH: PYTHON_SOURCE, SWITCHBOARD_URL: url, SWITCHBOARD_API_KEY: consumerKey, AGENT_ID: name },
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          workers.add(worker);
          const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
          const ready = new Promise<void>((resolve, reject) => {
            readline
              .createInterface({ input: worker.stdout! })
              .on('line', (line) => (line === READY ? resolve() : onMessage(sentAtOf(line))));
            void exited.then(() => reject(new Error(`the Python worker for ${name} exited before it was ready`)));
          });
          await ready;
          return async () => {
            worker.kill('SIGTERM');
            const timer = setTimeout(() => worker.kill('SIGKILL'), STOP_MS);
            await exited;
            clearTimeout(timer);
            workers.delete(worker);
          };
        },
        close: async () => undefined,
      };
    },
    brokerProcesses: () => server.processes(),
    consumerProcesses: () => [...workers].map((worker) => worker.pid!).filter(Boolean),
    async teardown() {
      for (const worker of workers) worker.kill('SIGKILL');
      await server.stop();
    },
  };
}
