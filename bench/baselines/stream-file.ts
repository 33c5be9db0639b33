// The reference for large transfers: a bare Fastify route that streams the request body to a
// file with pipeline() (PUT /upload), and one that streams a file out (GET /download).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import Fastify from 'fastify';
import { serve } from './serve.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'baseline-stream-'));
const file = path.join(dir, 'upload.bin');

const app = Fastify({ logger: false });
app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
app.put('/upload', async (request, reply) => {
  await pipeline(request.raw, fs.createWriteStream(file));
  return reply.code(200).send({ data: { size: fs.statSync(file).size } });
});
app.get('/download', async (_request, reply) => {
  const size = fs.statSync(file).size;
  return reply.type('application/octet-stream').header('content-length', String(size)).send(fs.createReadStream(file));
});
await serve(app, () => fs.rmSync(dir, { recursive: true, force: true }));
