/**
 * RabbitMQ: a durable classic queue per measurement, persistent messages on a confirm channel
 * (a send resolves on the broker's confirm; a batch is published at once, then
 * waitForConfirms), consumers with prefetch 100 and a manual ack per message.
 */
import amqp, { type ChannelModel } from 'amqplib';
import { pidsByName, reachable, sentAtOf, type PeerSystem } from './system.js';

const PORT = 5672;
const URL = `amqp://guest:guest@127.0.0.1:${PORT}`;

export function rabbitmq(): PeerSystem {
  return {
    name: 'RabbitMQ (durable queue, persistent, confirms, manual ack)',
    async setup() {
      if (!(await reachable(PORT))) return `RabbitMQ does not answer on 127.0.0.1:${PORT}`;
      // Connecting once checks the credentials before any measurement.
      await (await amqp.connect(URL)).close();
      return undefined;
    },
    async queue(name) {
      // Producer and consumer each have their own connection, as separate processes would.
      const producer = await amqp.connect(URL);
      // The broker's errors reject the pending operation; the events only must not crash the bench.
      producer.on('error', () => undefined);
      const channel = await producer.createConfirmChannel();
      channel.on('error', () => undefined);
      await channel.assertQueue(name, { durable: true });
      const consumers: ChannelModel[] = [];
      return {
        async send(payloads) {
          if (payloads.length === 1) {
            await new Promise<void>((resolve, reject) =>
              channel.sendToQueue(name, Buffer.from(payloads[0]!), { persistent: true }, (error) => (error ? reject(error) : resolve())),
            );
            return;
          }
          for (const payload of payloads) channel.sendToQueue(name, Buffer.from(payload), { persistent: true });
          await channel.waitForConfirms();
        },
        async consume(onMessage) {
          const consumer = await amqp.connect(URL);
          consumers.push(consumer);
          let failure: unknown;
          consumer.on('error', (error) => (failure ??= error));
          const incoming = await consumer.createChannel();
          incoming.on('error', (error) => (failure ??= error));
          await incoming.prefetch(100);
          const { consumerTag } = await incoming.consume(name, (message) => {
            if (!message) return;
            onMessage(sentAtOf(message.content));
            incoming.ack(message);
          });
          return async () => {
            if (failure) throw failure;
            await incoming.cancel(consumerTag);
            await consumer.close();
          };
        },
        async close() {
          await channel.deleteQueue(name);
          await producer.close();
          for (const consumer of consumers) await consumer.close().catch(() => undefined);
        },
      };
    },
    brokerProcesses: async () => [{ label: 'beam.smp', pids: pidsByName('beam.smp') }],
    // Each queue closes its own connections.
    teardown: async () => undefined,
  };
}
