/**
 * BullMQ on Redis: a queue per measurement, `add` per message or `addBulk` for a batch, one
 * Worker per queue with concurrency 100 (as the other consumers hold up to 100 messages);
 * completed jobs are removed. Redis's persistence (appendonly) is the server's own setting,
 * read and shown in the row's name, not changed.
 */
import { createRequire } from 'node:module';
import net from 'node:net';
import { Queue, Worker } from 'bullmq';
import { pidsByName, reachable, sentAtOf, type PeerSystem } from './system.js';

const PORT = 6379;
const connection = { host: '127.0.0.1', port: PORT };

/** Whether BullMQ can load `name` (it requires its Redis client lazily, from its own location). */
function resolvable(name: string): boolean {
  try {
    createRequire(createRequire(import.meta.url).resolve('bullmq')).resolve(name);
    return true;
  } catch {
    return false;
  }
}

/** One `CONFIG GET <parameter>` in RESP over a short-lived socket (BullMQ's client is not exposed). */
function redisConfig(parameter: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(connection);
    let reply = '';
    socket.setTimeout(2000, () => socket.destroy(new Error('redis CONFIG GET timed out')));
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      // CONFIG may be disabled (an error reply): the setting is then shown as unknown.
      if (reply.startsWith('-')) {
        socket.end();
        resolve('unknown');
        return;
      }
      // An array of the name and its value: *2, then two bulk strings.
      const value = /^\*2\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n([^\r]*)\r\n/.exec(reply)?.[1];
      if (value === undefined) return;
      socket.end();
      resolve(value);
    });
    const words = ['CONFIG', 'GET', parameter];
    socket.write(`*${words.length}\r\n${words.map((word) => `$${word.length}\r\n${word}\r\n`).join('')}`);
  });
}

export function bullmq(): PeerSystem {
  let persistence = 'persistence unknown';
  return {
    get name() {
      return `BullMQ on Redis (${persistence}, worker concurrency 100)`;
    },
    async setup() {
      if (!(await reachable(PORT))) return `redis-server does not answer on 127.0.0.1:${PORT}`;
      const appendonly = await redisConfig('appendonly');
      persistence = appendonly === 'yes' ? `appendonly, appendfsync ${await redisConfig('appendfsync')}` : 'no appendonly';
      if (!resolvable('ioredis'))
        return 'BullMQ needs its optional peer dependency ioredis, which is not installed (npm install -D ioredis)';
      return undefined;
    },
    async queue(name) {
      const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true, removeOnFail: true } });
      await queue.waitUntilReady();
      const workers: Worker[] = [];
      return {
        async send(payloads) {
          if (payloads.length === 1) await queue.add('peers', { p: payloads[0] });
          else await queue.addBulk(payloads.map((p) => ({ name: 'peers', data: { p } })));
        },
        async consume(onMessage) {
          const worker = new Worker<{ p: string }>(name, async (job) => onMessage(sentAtOf(job.data.p)), {
            connection: { ...connection, maxRetriesPerRequest: null },
            concurrency: 100,
          });
          workers.push(worker);
          let failure: unknown;
          worker.on('error', (error) => (failure ??= error));
          await worker.waitUntilReady();
          return async () => {
            await worker.close();
            if (failure) throw failure;
          };
        },
        async close() {
          for (const worker of workers) await worker.close();
          await queue.obliterate({ force: true });
          await queue.close();
        },
      };
    },
    brokerProcesses: async () => [{ label: 'redis-server', pids: pidsByName('redis-server') }],
    teardown: async () => undefined,
  };
}
