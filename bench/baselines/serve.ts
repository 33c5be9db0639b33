import type { FastifyInstance } from 'fastify';

/**
 * Listens on 127.0.0.1 (port PORT, else a free one) and prints `{"url": …}`, which the bench
 * waits for; on SIGTERM closes the server, runs `cleanup` and exits 0.
 */
export async function serve(app: FastifyInstance, cleanup: () => void = () => {}): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
  const address = app.server.address();
  if (address && typeof address === 'object') console.log(JSON.stringify({ url: `http://127.0.0.1:${address.port}` }));
  process.on('SIGTERM', () => {
    void app.close().then(() => {
      cleanup();
      process.exit(0);
    });
  });
}
