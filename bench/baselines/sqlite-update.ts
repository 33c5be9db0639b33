// The reference for heartbeats: a bare Fastify POST that takes a JSON body and does one SQLite
// update of an agent's row (WAL, synchronous=NORMAL, like Switchboard), nothing else.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { serve } from './serve.js';

const AGENTS = Number(process.env.BASELINE_AGENTS ?? 10_000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baseline-'));
const db = new Database(path.join(dir, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE heartbeats (agent_id TEXT PRIMARY KEY, load REAL, metadata TEXT, last_heartbeat_at INTEGER)');
const seed = db.prepare('INSERT INTO heartbeats VALUES (?, 0, ?, ?)');
db.transaction(() => {
  for (let i = 0; i < AGENTS; i++) seed.run(`bench-agent-${i}`, '{}', Date.now());
})();
const update = db.prepare('UPDATE heartbeats SET load = ?, metadata = ?, last_heartbeat_at = ? WHERE agent_id = ?');

const app = Fastify({ logger: false });
app.post<{ Body: { agent_id: string; load: number } }>('/', async (request) => {
  const { agent_id, load } = request.body;
  update.run(load, '{}', Date.now(), agent_id);
  return { data: { agent_id, load } };
});
await serve(app, () => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
