import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { signingString } from '../../src/auth/signing.js';
import { sha256Hex } from '../../src/kernel/sha256.js';

/** An Ed25519 key pair: the public key as raw base64 and PEM (both registrable), the private key to sign with. */
export function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('base64');
  const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
  return { raw, pem, privateKey };
}

/** The three signature headers of a request (design §3). */
export function signedHeaders(
  privateKey: KeyObject,
  agentId: string,
  method: string,
  path: string,
  body: string | Buffer = '',
  timestamp = new Date().toISOString(),
) {
  const message = signingString(method, path, timestamp, sha256Hex(body));
  return {
    'x-agent-id': agentId,
    'x-timestamp': timestamp,
    'x-signature': sign(null, Buffer.from(message), privateKey).toString('base64'),
  };
}
