import { Readable } from 'node:stream';

/**
 * A streamed response body (Server-Sent Events) that stops with a client that stopped reading.
 * The body is pulled only while the response takes what it is given, so a stream whose client
 * reads nothing holds at most the response's buffer and one chunk, never a backlog. If a chunk
 * waits that way for `stalledMs` the body is destroyed (the response with it: the connection
 * closes); so it is when `stop` aborts while a chunk waits. When `stop` aborts while `chunks`
 * waits for data, `chunks` is expected to end, which ends the response cleanly.
 */
export function streamBody(chunks: AsyncIterable<string>, options: { stalledMs: number; stop: AbortSignal }): Readable {
  const { stalledMs, stop } = options;
  async function* guarded() {
    for await (const chunk of chunks) {
      if (stop.aborted) return;
      const cut = () => body.destroy();
      const stalled = setTimeout(cut, stalledMs);
      stop.addEventListener('abort', cut, { once: true });
      try {
        // Resumes once the body wants more, i.e. the response's buffer has drained.
        yield chunk;
      } finally {
        clearTimeout(stalled);
        stop.removeEventListener('abort', cut);
      }
    }
  }
  const body: Readable = Readable.from(guarded(), { objectMode: false });
  return body;
}
