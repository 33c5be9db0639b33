/**
 * NATS JetStream: one stream per measurement on file storage, a subject per queue, a durable
 * pull consumer with explicit acks per queue. A send awaits the stream's PubAck; a batch is its
 * messages published at once and their PubAcks awaited together (JetStream has no batch publish
 * before 2.12).
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { pidsByName, reachable, sentAtOf, type PeerSystem } from './system.js';

const PORT = 4222;

export function natsJetStream(): PeerSystem {
  let connection: NatsConnection | undefined;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  return {
    name: 'NATS JetStream (file storage, explicit ack)',
    async setup() {
      if (!(await reachable(PORT))) return `nats-server does not answer on 127.0.0.1:${PORT}`;
      connection = await connect({ servers: `127.0.0.1:${PORT}`, timeout: 2000 });
      jsm = await jetstreamManager(connection);
      js = jetstream(connection);
      return undefined;
    },
    async queue(name) {
      const stream = name.replace(/[^A-Za-z0-9_-]/g, '_');
      const subject = `peers.${stream}`;
      await jsm.streams.add({ name: stream, subjects: [subject], storage: StorageType.File });
      await jsm.consumers.add(stream, { durable_name: 'consumer', ack_policy: AckPolicy.Explicit });
      const encoder = new TextEncoder();
      return {
        async send(payloads) {
          await Promise.all(payloads.map((payload) => js.publish(subject, encoder.encode(payload))));
        },
        async consume(onMessage) {
          const consumer = await js.consumers.get(stream, 'consumer');
          const messages = await consumer.consume({
            max_messages: 100,
            callback: (message) => {
              onMessage(sentAtOf(message.data));
              message.ack();
            },
          });
          return async () => {
            await messages.close();
          };
        },
        close: async () => {
          await jsm.streams.delete(stream);
        },
      };
    },
    brokerProcesses: async () => [{ label: 'nats-server', pids: pidsByName('nats-server') }],
    async teardown() {
      await connection?.drain();
      connection = undefined;
    },
  };
}
