import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for an OpenAI-compatible `POST /v1/embeddings` endpoint. Each text becomes
 * a vector over a few "concepts" (words that mean the same land on the same axis), so cosine
 * similarity behaves like a semantic model's would for the words the tests use.
 */
const CONCEPTS: string[][] = [
  ['cat', 'cats', 'kitten', 'kittens', 'feline', 'felines'],
  ['dog', 'dogs', 'puppy', 'canine'],
  ['money', 'invoice', 'invoices', 'billing', 'payment', 'cash'],
  ['picture', 'pictures', 'photo', 'photos', 'image', 'images', 'snapshot', 'snapshots'],
  ['summarize', 'summary', 'condense', 'digest', 'gist'],
];

export function fakeEmbedding(text: string): number[] {
  const vector = new Array<number>(CONCEPTS.length + 1).fill(0);
  vector[CONCEPTS.length] = 0.05; // a small shared component, as real models have
  for (const word of text.toLowerCase().split(/[^a-z]+/)) {
    CONCEPTS.forEach((words, axis) => {
      if (words.includes(word)) vector[axis]! += 1;
    });
  }
  return vector;
}

export interface FakeEmbeddings {
  url: string;
  requests: { model: unknown; input: unknown; authorization: string | undefined }[];
  /** 'ok' answers; 'error' answers 500; 'hang' never answers. */
  mode: 'ok' | 'error' | 'hang';
  close(): Promise<void>;
}

export async function startFakeEmbeddings(): Promise<FakeEmbeddings> {
  const fake: FakeEmbeddings = { url: '', requests: [], mode: 'ok', close: async () => undefined };
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model: unknown; input: string[] };
      fake.requests.push({ model: body.model, input: body.input, authorization: req.headers.authorization });
      if (fake.mode === 'hang') {
        hanging.add(res);
        return;
      }
      if (fake.mode === 'error') {
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
        return;
      }
      const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text) }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}
