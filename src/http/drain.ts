import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Makes the server's close wait for the requests in flight and for nothing else.
 *
 * Node's `server.close()` ends the keep-alive connections that are idle when it starts, and
 * only those, so two kinds of idle connection would hold the close (and a SIGTERM's drain)
 * until their keep-alive timeout (72 s) or for ever:
 * - one whose answer was under way then (a streamed download, a long poll) and finished later;
 * - one that has not sent a byte yet (a browser's preconnect), which Node counts as busy.
 * So once closing: an answer not yet sent says `Connection: close`; each finished answer ends
 * the connections idle by then; connections that sent nothing are ended at once.
 */
export function drainOnClose(app: FastifyInstance): void {
  let closing = false;
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    if (closing) return void socket.destroy();
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  // Node has detached the answer from its connection by now, so the connection counts as idle
  // (unless a pipelined request is waiting on it).
  app.addHook('onResponse', (request, reply, done) => {
    if (closing) app.server.closeIdleConnections();
    done();
  });
}
