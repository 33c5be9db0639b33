// The reference for the authenticated read of issue 2: a bare Fastify GET that runs the same two
// queries as GET /api/v1/auth/keys?limit=1 (one page of active keys, and their count) on the same
// SQLite file Switchboard uses (read-only; WAL lets it read beside the server), with no auth.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { serve } from './serve.js';

const file = process.env.BASELINE_DB;
if (!file) throw new Error('BASELINE_DB is required');
const db = new Database(file, { readonly: true });
const page = db.prepare('SELECT * FROM api_keys WHERE revoked_at IS NULL ORDER BY id LIMIT ? OFFSET ?');
const count = db.prepare('SELECT count(*) AS total FROM api_keys WHERE revoked_at IS NULL');

const app = Fastify({ logger: false });
app.get<{ Querystring: { limit?: string } }>('/', async (request) => {
  const limit = Number(request.query.limit ?? 50);
  const { total } = count.get() as { total: number };
  return { data: page.all(limit, 0), meta: { total, limit, offset: 0 } };
});
await serve(app, () => {
  db.close();
});
