import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { expect, it } from 'vitest';
import { bytesOf, createArtifact, sha256 } from '../artifacts/fixtures.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/** Far below the keep-alive timeout (72 s) that an idle connection would hold the close for. */
const CLOSE_BOUND_MS = 5_000;

/** How long `promise` took to settle, or 'too slow' past `ms`. */
function timed(promise: Promise<unknown>, ms: number): Promise<number | 'too slow'> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'too slow'>((resolve) => (timer = setTimeout(() => resolve('too slow'), ms)));
  return Promise.race([promise.then(() => Date.now() - started), late]).finally(() => clearTimeout(timer));
}

/** Starts a server for one test and ends it after, whatever the test left open. */
async function withServer(dialect: Parameters<typeof startServer>[0], test: (server: TestServer) => Promise<void>) {
  const server = await startServer(dialect);
  try {
    await test(server);
  } finally {
    await server.close();
  }
}

describeEachDialect('Closing the server', (dialect) => {
  it('finishes a file download under way, then ends its kept-alive connection at once', async () => {
    await withServer(dialect, async (server) => {
      // Well over the inline limit (a file in the blob store) and over what the sockets buffer.
      const bytes = bytesOf(16 * 1024 * 1024);
      const artifact = await createArtifact(server.api, { bytes, name: 'big.bin' });
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        let socketClosed!: Promise<void>;
        let closing!: Promise<void>;
        const digest = createHash('sha256');
        const received = await new Promise<number>((resolve, reject) => {
          const request = http.get(`${server.url}/api/v1/artifacts/${artifact.id}/download`, {
            agent,
            headers: { authorization: `Bearer ${server.adminKey}` },
          });
          request.on('socket', (socket) => (socketClosed = new Promise((done) => socket.once('close', () => done()))));
          request.on('error', reject);
          request.on('response', (response) => {
            // The headers are out: close while the body is still to send, held back by this
            // client until the server has stopped listening.
            response.pause();
            closing = server.app.close();
            void waitFor(() => !server.app.http.server.listening).then(() => response.resume(), reject);
            let length = 0;
            response.on('data', (chunk: Buffer) => {
              digest.update(chunk);
              length += chunk.length;
            });
            response.on('end', () => resolve(length));
          });
        });
        expect(received).toBe(bytes.length);
        expect(digest.digest('hex')).toBe(sha256(bytes));
        expect(await timed(closing, CLOSE_BOUND_MS)).not.toBe('too slow');
        expect(await timed(socketClosed, CLOSE_BOUND_MS)).not.toBe('too slow');
      } finally {
        agent.destroy();
      }
    });
  });

  it('ends a connection that has sent nothing yet (a browser preconnect)', async () => {
    await withServer(dialect, async (server) => {
      const accepted = new Promise((resolve) => server.app.http.server.once('connection', resolve));
      const socket = net.connect({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
      const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.on('error', () => {});
      try {
        await accepted;
        expect(await timed(server.app.close(), CLOSE_BOUND_MS)).not.toBe('too slow');
        expect(await timed(socketClosed, CLOSE_BOUND_MS)).not.toBe('too slow');
      } finally {
        socket.destroy();
      }
    });
  });
});
