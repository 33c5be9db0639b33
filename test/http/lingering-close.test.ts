import http from 'node:http';
import net from 'node:net';
import { expect, it } from 'vitest';
import { LINGER_BYTES } from '../../src/http/lingering-close.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const CHUNK = Buffer.alloc(64 * 1024, 0x20);

interface Outcome {
  status?: number;
  connection?: string;
  code?: string;
  bytesSent: number;
}

/**
 * POSTs `total` bytes of JSON-typed body (with Content-Length), writing as fast as the socket
 * takes them. `stopOnAnswer`: stop writing once the answer arrives (as curl does); otherwise
 * write on regardless, as a client that reads only after sending does.
 */
function blast(url: string, key: string, total: number, stopOnAnswer: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { bytesSent: 0 };
    let answered = false;
    const request = http.request(url, {
      method: 'POST',
      agent: false,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': String(total) },
    });
    request.on('response', (response) => {
      answered = true;
      outcome.status = response.statusCode;
      outcome.connection = response.headers.connection;
      response.resume();
      response.on('end', () => {
        if (stopOnAnswer) {
          request.destroy();
          resolve(outcome);
        }
      });
    });
    request.on('error', (err: NodeJS.ErrnoException) => {
      outcome.code = err.code;
      resolve(outcome);
    });
    request.on('close', () => resolve(outcome));
    const pump = () => {
      while (outcome.bytesSent < total) {
        if (answered && stopOnAnswer) return;
        outcome.bytesSent += CHUNK.length;
        if (!request.write(CHUNK)) return void request.once('drain', pump);
      }
      request.end();
    };
    pump();
  });
}

/**
 * A client on a bare socket that sends a `total`-byte body as fast as the socket takes it and
 * reads what comes back, but never stops writing because of it.
 */
function writeRegardless(url: string, key: string, total: number): Promise<{ answer: string; bytesSent: number; code?: string }> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    let answer = '';
    let bytesSent = 0;
    let code: string | undefined;
    // Half-open: the server's end of sending does not end this client's writing.
    const socket = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.on('error', (err: NodeJS.ErrnoException) => (code = err.code));
    socket.on('close', () => resolve({ answer, bytesSent, code }));
    socket.write(
      `POST /api/v1/auth/keys HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${total}\r\n\r\n`,
    );
    const pump = () => {
      while (bytesSent < total && !socket.destroyed) {
        bytesSent += CHUNK.length;
        if (!socket.write(CHUNK)) return void socket.once('drain', pump);
      }
    };
    pump();
  });
}

describeEachDialect('Answers before the body is read', (dialect) => {
  const server = useServer(dialect);

  it('reach a client that is still writing as fast as it can, and close the connection after', async () => {
    for (let i = 0; i < 10; i++) {
      const outcome = await blast(`${server.url}/api/v1/auth/keys`, server.adminKey, 8 * 1024 * 1024, true);
      expect(outcome).toMatchObject({ status: 413, connection: 'close' });
      expect(outcome.code).toBeUndefined();
    }
  });

  it('stop reading a client that never stops writing once it has sent the lingering allowance', async () => {
    const total = 4 * LINGER_BYTES;
    const outcome = await writeRegardless(server.url, server.adminKey, total);
    expect(outcome.answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(outcome.answer).toMatch(/\r\nconnection: close\r\n/i);
    // Cut off once the allowance (and what the socket buffers held) had been read, not at the end.
    expect(outcome.bytesSent).toBeLessThan(total);
    expect(['EPIPE', 'ECONNRESET']).toContain(outcome.code);
  });

  it('keep a connection open after an error whose body had arrived whole', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const post = (body: string) =>
      new Promise<number>((resolve, reject) => {
        const request = http.request(`${server.url}/api/v1/auth/keys`, {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json' },
        });
        request.on('socket', (socket) => sockets.add(socket));
        request.on('response', (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        request.on('error', reject);
        request.end(body);
      });
    try {
      expect(await post('{"colour": "blue"}')).toBe(400);
      expect(await post('{"agent_id": "kept-alive"}')).toBe(201);
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });
});
