import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { Api } from '../helpers/api.js';
import { startServer, useServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const run = promisify(execFile);
const CLI = path.resolve('dist/cli.js');

describeEachDialect('API keys', (dialect) => {
  const server = useServer(dialect);

  it('creates an agent key shown once, usable at once', async () => {
    const res = await server.api.post('/api/v1/auth/keys', { agent_id: 'alpha', name: 'alpha worker' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ role: 'agent', agent_id: 'alpha', name: 'alpha worker', revoked_at: null });
    expect(res.body.data.key).toMatch(/^sk_/);
    expect(res.body.data.id).toMatch(/^key_/);
    const agent = server.api.withKey(res.body.data.key);
    const me = await agent.get('/api/v1/auth/whoami');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({
      kind: 'agent',
      id: 'alpha',
      role: 'agent',
      agent_id: 'alpha',
      key_id: res.body.data.id,
      actor: 'alpha',
    });
    const listed = await server.api.get('/api/v1/auth/keys?limit=500');
    const entry = listed.body.data.find((k: { id: string }) => k.id === res.body.data.id);
    expect(entry).toBeDefined();
    expect(entry).not.toHaveProperty('key');
  });

  it('requires agent_id for agent keys and admin rights for the keys API', async () => {
    const missing = await server.api.post('/api/v1/auth/keys', { role: 'agent' });
    expect(missing.status).toBe(400);
    expect(missing.body.error.details).toEqual([{ field: 'agent_id', message: 'is required for an agent key' }]);
    const agent = await server.agent('beta');
    for (const res of [
      await agent.post('/api/v1/auth/keys', { agent_id: 'beta' }),
      await agent.get('/api/v1/auth/keys'),
      await agent.delete('/api/v1/auth/keys/key_x'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
  });

  it('rejects missing, malformed and unknown credentials with 401', async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer not-a-key' },
      { authorization: `Bearer sk_${'A'.repeat(43)}` },
    ];
    for (const headers of cases) {
      const res = await server.api.get('/api/v1/auth/whoami', { key: null, headers });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="switchboard"');
    }
  });

  it('revokes a key effective on the next request', async () => {
    const created = await server.api.post('/api/v1/auth/keys', { agent_id: 'gamma' });
    const agent = server.api.withKey(created.body.data.key);
    expect((await agent.get('/api/v1/auth/whoami')).status).toBe(200);
    const revoked = await server.api.delete(`/api/v1/auth/keys/${created.body.data.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toEqual({ id: created.body.data.id, deleted: true, public_keys_deleted: [], public_keys_deleted_count: 0 });
    const after = await agent.get('/api/v1/auth/whoami');
    expect(after.status).toBe(401);
    expect(after.body.error.message).toMatch(/revoked/);
    expect((await server.api.delete(`/api/v1/auth/keys/${created.body.data.id}`)).status).toBe(409);
    expect((await server.api.delete('/api/v1/auth/keys/key_unknown')).status).toBe(404);
    const active = await server.api.get('/api/v1/auth/keys?limit=500');
    expect(active.body.data.map((k: { id: string }) => k.id)).not.toContain(created.body.data.id);
    const all = await server.api.get('/api/v1/auth/keys?limit=500&include_revoked=true');
    expect(all.body.data.find((k: { id: string }) => k.id === created.body.data.id).revoked_at).toMatch(/Z$/);
  });

  it('lets admin keys bound to an agent act as that agent', async () => {
    const res = await server.api.post('/api/v1/auth/keys', { role: 'admin', agent_id: 'operator' });
    const me = await server.api.withKey(res.body.data.key).get('/api/v1/auth/whoami');
    expect(me.body.data).toMatchObject({ role: 'admin', agent_id: 'operator', actor: 'operator' });
  });

  it('forbids an agent acting as another agent (403)', async () => {
    const agent = await server.agent('delta');
    const own = await agent.get('/api/v1/auth/agents/delta/public-keys');
    expect(own.status).toBe(200);
    const other = await agent.get('/api/v1/auth/agents/epsilon/public-keys');
    expect(other.status).toBe(403);
    expect(other.body.error.code).toBe('forbidden');
  });
});

describeEachDialect('API key revocation from anywhere', (dialect) => {
  it('reaches a second node on the same database that had the key cached: its next request is 401', async () => {
    const first = await startServer(dialect);
    const second = await startServer(dialect, { database: first.database, adminKey: first.adminKey });
    try {
      const created = await first.api.post('/api/v1/auth/keys', { agent_id: 'roaming' });
      const onSecond = new Api(second.url, created.body.data.key);
      expect((await onSecond.get('/api/v1/auth/whoami')).status).toBe(200);
      expect((await first.api.delete(`/api/v1/auth/keys/${created.body.data.id}`)).status).toBe(200);
      expect((await onSecond.get('/api/v1/auth/whoami')).status).toBe(401);
    } finally {
      await second.close();
      await first.close();
    }
  });

  // SQLite's nodes learn of it from the file (its data version), not from one another.
  it.runIf(dialect === 'postgres')('answers a revocation only once every live node has said it forgot the key', async () => {
    const server = await startServer(dialect);
    const { db } = server.app.platform.database;
    const { notifier } = server.app.platform;
    const now = Date.now();
    // A node of the registry that is up, and slow to hear: the test speaks for it.
    await db
      .insertInto('cluster_nodes')
      .values({ id: 'node_slow', version: 'test', host: 'test', pid: 1, started_at: now, last_seen_at: now, stopped_at: null })
      .execute();
    const stops: (() => void)[] = [];
    try {
      const created = await server.api.post('/api/v1/auth/keys', { agent_id: 'slowly-forgotten' });
      const { id } = created.body.data as { id: string };
      const forgottenHere = new Promise<void>((resolve) =>
        stops.push(notifier.listen('auth:credential-forgotten', (said) => said.endsWith(` ${id}`) && resolve())),
      );
      const revoked = server.api.delete(`/api/v1/auth/keys/${id}`).then((res) => ({ res, at: performance.now() }));
      await forgottenHere;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const slowNodeForgotAt = performance.now();
      await notifier.notify('auth:credential-forgotten', `node_slow ${id}`);
      const { res, at } = await revoked;
      expect(res.status).toBe(200);
      expect(at).toBeGreaterThanOrEqual(slowNodeForgotAt);
    } finally {
      for (const stop of stops) stop();
      await db.deleteFrom('cluster_nodes').where('id', '=', 'node_slow').execute();
      await server.close();
    }
  });

  it('reaches a running server when the CLI revokes: its requests are 401 within 2 s', async () => {
    const server = await startServer(dialect);
    try {
      const created = await server.api.post('/api/v1/auth/keys', { agent_id: 'offline-revoked' });
      const agent = server.api.withKey(created.body.data.key);
      expect((await agent.get('/api/v1/auth/whoami')).status).toBe(200);
      await run(process.execPath, [CLI, 'keys', 'revoke', created.body.data.id], {
        env: {
          PATH: process.env.PATH,
          SWITCHBOARD_DATA_DIR: server.database.dataDir,
          ...(server.database.databaseUrl ? { DATABASE_URL: server.database.databaseUrl } : {}),
        },
      });
      // The server hears of it through the database's notice after the CLI's commit: under load a
      // request can come first (CI saw one 200).
      const after = await waitFor(async () => {
        const res = await agent.get('/api/v1/auth/whoami');
        return res.status === 401 ? res : null;
      }, 2000);
      expect(after.body.error.message).toMatch(/revoked/);
    } finally {
      await server.close();
    }
  });

  it.runIf(dialect === 'postgres')(
    'makes one bootstrap admin key when two nodes start together without SWITCHBOARD_ADMIN_KEY',
    async () => {
      const database = await createTestDatabase(dialect);
      const dataDirs = [0, 1].map(() => fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-node-')));
      const nodes = await Promise.all(
        dataDirs.map((dataDir) => startServer(dialect, { database, env: { SWITCHBOARD_DATA_DIR: dataDir, SWITCHBOARD_ADMIN_KEY: '' } })),
      );
      try {
        const keyFiles = dataDirs.map((dir) => path.join(dir, 'admin.key')).filter((file) => fs.existsSync(file));
        expect(keyFiles).toHaveLength(1);
        const adminKey = fs.readFileSync(keyFiles[0]!, 'utf8').trim();
        for (const node of nodes) {
          const listed = await new Api(node.url, adminKey).get('/api/v1/auth/keys?limit=500');
          expect(listed.status).toBe(200);
          expect(listed.body.data.filter((k: { role: string }) => k.role === 'admin')).toHaveLength(1);
        }
      } finally {
        await Promise.all(nodes.map((node) => node.close()));
        await database.drop();
        for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it.runIf(dialect === 'postgres')('trusts no cached key across a lost LISTEN connection', async () => {
    const first = await startServer(dialect);
    const second = await startServer(dialect, { database: first.database, adminKey: first.adminKey });
    const admin = new pg.Client({ connectionString: first.database.databaseUrl! });
    await admin.connect();
    try {
      const created = await first.api.post('/api/v1/auth/keys', { agent_id: 'unheard' });
      const onSecond = new Api(second.url, created.body.data.key);
      expect((await onSecond.get('/api/v1/auth/whoami')).status).toBe(200);
      // Cut every LISTEN connection and wait until the second node has noticed: a revocation
      // announced now may never reach it.
      const epoch = second.app.platform.notifier.epoch;
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
      );
      await waitFor(() => second.app.platform.notifier.epoch !== epoch, 5000);
      expect((await first.api.delete(`/api/v1/auth/keys/${created.body.data.id}`)).status).toBe(200);
      // The other node hears of it through the notifier after the revoke's commit, not before the
      // revoke answers: under load a request can come first (CI saw one 200).
      await waitFor(async () => (await onSecond.get('/api/v1/auth/whoami')).status === 401, 2000);
    } finally {
      await admin.end();
      await second.close();
      await first.close();
    }
  });
});
