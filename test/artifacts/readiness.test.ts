import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/server.js';

describe('/readyz and the file blob store', () => {
  const server = useServer('sqlite');

  it('reports the blob store down (503) while its directory is gone', async () => {
    const ready = await server.api.get('/readyz', { key: null });
    expect([ready.status, ready.body.checks.blobs]).toEqual([200, 'up']);
    const staging = path.join(server.database.dataDir, 'blobs', 'tmp');
    fs.rmSync(staging, { recursive: true });
    try {
      const gone = await server.api.get('/readyz', { key: null });
      expect([gone.status, gone.body]).toEqual([
        503,
        { status: 'unavailable', checks: { database: 'up', blobs: 'down', listen: 'in_process', workers: 'up' } },
      ]);
    } finally {
      fs.mkdirSync(staging);
    }
    expect((await server.api.get('/readyz', { key: null })).status).toBe(200);
  });
});
