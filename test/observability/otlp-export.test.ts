import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import { spawnServer } from '../helpers/process.js';

interface Export {
  path: string;
  contentType: string;
  body: Buffer;
}

/** A collector on 127.0.0.1 that keeps what it is sent and answers as OTLP/HTTP does. */
async function collector(answer = true): Promise<{ url: string; exports: Export[]; close(): Promise<void> }> {
  const exports: Export[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '', body: Buffer.concat(chunks) });
      if (!answer) return;
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const ADMIN_KEY = 'sk_admin_otlp_export_test_0123456789';

describe('OTLP export from a real server process (needs npm run build)', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it.each([
    ['http/protobuf', 'application/x-protobuf', undefined],
    ['http/json', 'application/json', 'http/json'],
  ])('sends the spans of a request as %s to the collector, flushed on SIGTERM', async (_protocol, contentType, setting) => {
    const sink = await collector();
    cleanups.push(sink.close);
    const database = await createTestDatabase('sqlite');
    cleanups.push(() => database.drop());
    const server = await spawnServer(database, ADMIN_KEY, {
      OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
      ...(setting ? { OTEL_EXPORTER_OTLP_PROTOCOL: setting } : {}),
    });
    cleanups.push(async () => {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await server.exited;
    });
    const sent = await fetch(`${server.url}/api/v1/messaging/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ destination: 'otlp-consumer', event_name: 'otlp.check', payload: {} }),
    });
    expect(sent.status, await sent.clone().text()).toBe(201);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);

    expect(sink.exports.length).toBeGreaterThan(0);
    for (const sent of sink.exports) {
      expect(sent.path).toBe('/v1/traces');
      expect(sent.contentType).toBe(contentType);
    }
    // Span names travel as UTF-8 strings in both encodings.
    const all = Buffer.concat(sink.exports.map((e) => e.body)).toString('latin1');
    expect(all).toContain('POST /api/v1/messaging/send');
    expect(all).toContain('send otlp-consumer');
    if (setting === 'http/json') expect(() => sink.exports.map((e) => JSON.parse(e.body.toString()) as unknown)).not.toThrow();
  });

  it('stops on SIGTERM even when the collector never answers (the last spans are given up)', async () => {
    const sink = await collector(false);
    cleanups.push(sink.close);
    const database = await createTestDatabase('sqlite');
    cleanups.push(() => database.drop());
    // An exporter timeout far beyond the test's: only the server's own bound lets it exit in time.
    const server = await spawnServer(database, ADMIN_KEY, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_EXPORTER_OTLP_TIMEOUT: '600000' });
    cleanups.push(async () => {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
      await server.exited;
    });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(sink.exports.length).toBeGreaterThan(0);
  });
});
