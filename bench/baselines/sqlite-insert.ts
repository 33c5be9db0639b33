// The reference for write endpoints: a bare Fastify POST route that takes a JSON body and does
// one SQLite insert (WAL, synchronous=NORMAL, like Switchboard), nothing else.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { serve } from './serve.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baseline-'));
const db = new Database(path.join(dir, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE rows (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, body TEXT, created_at INTEGER)');
const insert = db.prepare('INSERT INTO rows (id, body, created_at) VALUES (?, ?, ?)');
let n = 0;

const app = Fastify({ logger: false });
app.post('/', async (request, reply) => {
  const id = `row_${++n}`;
  insert.run(id, JSON.stringify(request.body), Date.now());
  return reply.code(201).send({ data: { id } });
});
await serve(app, () => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
