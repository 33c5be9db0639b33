import { createHash, createPrivateKey, sign, type KeyObject } from 'node:crypto';
import type { ChannelSocket } from './channel.js';
import { Switchboard as BaseSwitchboard, type ClientOptions, type ConnectionOptions, type RequestSigner } from './client.js';
import { openNodeSocket } from './node-socket.js';

const CHUNK_BYTES = 1024 * 1024;

/** The client's options in Node: an API key, an Ed25519 private key (PEM or KeyObject), or any signer. */
export type SwitchboardOptions = ClientOptions | ({ agentId: string; privateKey: string | KeyObject } & ConnectionOptions);

/** Signs as `agentId` with an Ed25519 private key; a PEM is parsed here, so a bad one throws at once. */
export function ed25519Signer(agentId: string, privateKey: string | KeyObject): RequestSigner {
  const key = typeof privateKey === 'string' ? createPrivateKey(privateKey) : privateKey;
  return {
    agentId,
    async sha256Hex(body) {
      const hash = createHash('sha256');
      if (typeof body === 'string') return hash.update(body).digest('hex');
      for await (const chunk of body.stream()) hash.update(chunk);
      return hash.digest('hex');
    },
    headers(method, pathWithQuery, bodySha256) {
      const timestamp = new Date().toISOString();
      const message = `${method}\n${pathWithQuery}\n${timestamp}\n${bodySha256}`;
      return { 'x-agent-id': agentId, 'x-timestamp': timestamp, 'x-signature': sign(null, Buffer.from(message), key).toString('base64') };
    },
  };
}

/**
 * The client as Node code uses it (`switchboard/client`): the browser-safe client of client.ts,
 * which also takes `{ agentId, privateKey }` and opens the agent channel with ws.
 */
export class Switchboard extends BaseSwitchboard {
  constructor(options: SwitchboardOptions) {
    super('privateKey' in options ? { ...options, signer: ed25519Signer(options.agentId, options.privateKey) } : options);
  }

  /** undici sends bytes given whole with several times the CPU it takes for the same bytes as a stream of 1 MiB chunks. */
  protected override bytesBody(bytes: Uint8Array): ReadableStream<Uint8Array> {
    let at = 0;
    return new ReadableStream({
      pull(controller) {
        controller.enqueue(bytes.subarray(at, (at += CHUNK_BYTES)));
        if (at >= bytes.length) controller.close();
      },
    });
  }

  /** node:crypto hashes the bytes where they are (WebCrypto's digest copies them first). */
  protected override sha256Hex(bytes: Uint8Array): Promise<string> {
    return Promise.resolve(createHash('sha256').update(bytes).digest('hex'));
  }

  /** The channel's WebSocket, with ws (a browser's cannot send the credentials). */
  protected override openSocket(url: string, headers: Record<string, string>): Promise<ChannelSocket> {
    return openNodeSocket(url, headers);
  }
}
