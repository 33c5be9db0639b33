import WebSocket from 'ws';
import type { ChannelSocket } from './channel.js';
import { SwitchboardError } from './errors.js';

/**
 * Opens the channel's WebSocket in Node with ws, which sends headers (the credentials) with the
 * upgrade. A refused upgrade rejects with the server's error envelope as a SwitchboardError.
 */
export function openNodeSocket(url: string, headers: Record<string, string>): Promise<ChannelSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (request, response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk.length + text.length > 65_536 ? '' : chunk));
      response.on('end', () => {
        let error: { code?: string; message?: string; details?: unknown } = {};
        try {
          error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
        } catch {
          // Not an envelope (a proxy's page): the status is all there is.
        }
        const status = response.statusCode ?? 0;
        const requestId = response.headers['x-request-id'];
        reject(
          new SwitchboardError(
            status,
            error.code ?? 'http_error',
            error.message ?? `The server refused the channel (${status})`,
            typeof requestId === 'string' ? requestId : undefined,
            error.details,
          ),
        );
        request.destroy();
      });
    });
  });
}
