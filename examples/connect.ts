import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Switchboard } from '../src/client/index.js';

/** The server the examples talk to: SWITCHBOARD_URL and the admin key `npm start` generated. */
export function adminClient(): Switchboard {
  const url = process.env.SWITCHBOARD_URL ?? 'http://127.0.0.1:8080';
  const apiKey = process.env.SWITCHBOARD_API_KEY ?? readFileSync(`${process.env.SWITCHBOARD_DATA_DIR ?? 'data'}/admin.key`, 'utf8').trim();
  return new Switchboard({ url, apiKey });
}

/** A client that signs as `agentId` with a fresh Ed25519 key registered for it (design §3). */
export async function signingClient(admin: Switchboard, agentId: string): Promise<Switchboard> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  await admin.auth.addPublicKey({ path: { agent_id: agentId }, body: { public_key: raw } });
  return new Switchboard({ url: admin.url, agentId, privateKey });
}

/** Runs an example's main until Ctrl-C when the file is started directly. */
export function runUntilInterrupted(start: () => Promise<{ stop(): Promise<unknown> }>): void {
  start().then(
    (running) => {
      console.log('running; Ctrl-C stops');
      process.once('SIGINT', () => void running.stop().then(() => process.exit(0)));
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
