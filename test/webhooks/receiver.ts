import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach } from 'vitest';
import { waitFor } from '../helpers/wait.js';

/** One request a receiver got. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** How a receiver answers its n-th request (0-based): a status and body, or 'hang' (never answers). */
export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

/** A webhook receiver on 127.0.0.1 that records every request and answers as told. */
export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** The first `count` requests, once they have arrived. */
  until(count: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(answer: (index: number, request: Received) => Answer = () => ({ status: 204 })): Promise<Receiver> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const got = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      const reply = answer(received.length, got);
      received.push(got);
      if (reply === 'hang') return;
      response.writeHead(reply.status, reply.headers).end(reply.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    until: (count) => waitFor(() => (received.length >= count ? received.slice(0, count) : undefined), 10_000),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Starts receivers for the tests of a describe block, each closed after its test (after the
 * block's own afterEach hooks, which run first: they may still use them).
 */
export function useReceivers(): (...args: Parameters<typeof startReceiver>) => Promise<Receiver> {
  const receivers: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });
  return async (...args) => {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  };
}
