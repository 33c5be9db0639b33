// The reference for discovery lookups: a bare Fastify GET that reads the same 20 rows from the
// same SQLite file Switchboard uses (read-only; WAL lets it read beside the server) — the
// capability rows of one name joined with their heartbeats — and returns them as JSON.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { serve } from './serve.js';

const file = process.env.BASELINE_DB;
if (!file) throw new Error('BASELINE_DB is required');
const db = new Database(file, { readonly: true });
const select = db.prepare(
  `SELECT c.id, c.agent_id, c.capability, c.metadata, c.groups, h.load, h.last_heartbeat_at
     FROM discovery_capabilities c LEFT JOIN discovery_heartbeats h ON h.agent_id = c.agent_id
    WHERE c.capability = ? ORDER BY c.id LIMIT 20`,
);

const app = Fastify({ logger: false });
app.get<{ Querystring: { capability: string } }>('/', async (request) => ({ data: { agents: select.all(request.query.capability) } }));
await serve(app, () => {
  db.close();
});
