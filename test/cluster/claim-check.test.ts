import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { acknowledge, receive } from '../helpers/agent.js';
import { useTestDatabase } from '../helpers/database.js';
import { describeEachDialect } from '../helpers/dialects.js';
import { startServer, type TestServer } from '../helpers/server.js';

const M = '/api/v1/messaging';
const C = '/api/v1/coordination';
const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

interface Ref {
  artifact_id: string;
  url: string;
  size_bytes: number;
  sha256: string;
}

describeEachDialect('cluster: large payloads by reference', (dialect) => {
  const database = useTestDatabase(dialect);

  /** The referenced bytes, fetched with no key from `node` (the URL's path and query on its address). */
  const fetchFrom = async (node: TestServer, ref: Ref) => {
    const url = new URL(ref.url);
    const res = await fetch(`${node.url}${url.pathname}${url.search}`);
    expect(res.status).toBe(200);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect(bytes.length).toBe(ref.size_bytes);
    expect(sha256(bytes)).toBe(ref.sha256);
    return Buffer.from(bytes).toString();
  };

  it.runIf(dialect === 'postgres')(
    'a payload sent through one node is received through the other, and its URL serves it from both; an ack output too',
    async () => {
      const adminKey = `sk_test_${randomBytes(16).toString('hex')}`;
      const a = await startServer(dialect, { database: database(), adminKey });
      // A node of its own on disk: what it serves comes from the database, not a shared folder.
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-node-b-'));
      const b = await startServer(dialect, { database: { ...database(), dataDir }, adminKey });
      try {
        const sender = await a.agent('cl-sender');
        const receiver = await b.agent('cl-receiver');
        const payload = { text: 'c'.repeat(400 * 1024), n: 1 };
        const text = JSON.stringify(payload);
        const sent = await sender.post(`${M}/send`, { destination: 'cl-receiver', event_name: 'big', payload });
        expect(sent.status, sent.text).toBe(201);
        const [message] = await receive(receiver, 'cl-receiver', 5, 1);
        expect(message?.payload).toBeNull();
        const ref = (message as unknown as { payload_ref: Ref }).payload_ref;
        expect(ref).toMatchObject({ size_bytes: Buffer.byteLength(text), sha256: sha256(text) });
        for (const node of [b, a]) expect(await fetchFrom(node, ref)).toBe(text);

        await acknowledge(receiver, message!.message_id);

        // A step's output over the limit, acknowledged through B: its reference as either node shows the run.
        const plan = await a.api.post(`${C}/plans`, {
          alias: 'cl-plan',
          steps: [{ id: 'work', type: 'agent', agent: 'cl-receiver', input: { n: 1 } }],
        });
        expect(plan.status, plan.text).toBe(201);
        const run = await a.api.post(`${C}/runs`, { plan_id: plan.body.data.id, input: {} });
        expect(run.status, run.text).toBe(201);
        const [step] = await receive(receiver, 'cl-receiver', 5, 1);
        const output = { result: 'r'.repeat(300 * 1024) };
        await acknowledge(receiver, step!.message_id, output);
        const outputText = JSON.stringify(output);
        for (const shown of [a, b]) {
          const done = (await shown.api.get(`${C}/runs/${run.body.data.id}`)).body.data;
          expect(done.status).toBe('completed');
          const work = done.steps.find((s: { id: string }) => s.id === 'work') as { output: unknown; output_ref: Ref };
          expect(work.output).toBeNull();
          for (const node of [a, b]) expect(await fetchFrom(node, work.output_ref)).toBe(outputText);
        }
      } finally {
        await b.close();
        await a.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
    90_000,
  );
});
