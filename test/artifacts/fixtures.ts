import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Api, ApiResponse } from '../helpers/api.js';
import type { TestServer } from '../helpers/server.js';

export const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

/** Incompressible test content of `size` bytes. */
export const bytesOf = (size: number) => new Uint8Array(randomBytes(size));

export interface FormOptions {
  /** The file part's content; omit to send a form without a file. */
  bytes?: Uint8Array | string;
  filename?: string;
  /** The file part's own Content-Type. */
  fileType?: string;
  name?: string;
  content_type?: string;
  /** Sent as text; objects are JSON-encoded. */
  metadata?: unknown;
  extra?: Record<string, string>;
  headers?: Record<string, string>;
}

export function formOf(options: FormOptions): FormData {
  const form = new FormData();
  if (options.name !== undefined) form.append('name', options.name);
  if (options.content_type !== undefined) form.append('content_type', options.content_type);
  if (options.metadata !== undefined) {
    form.append('metadata', typeof options.metadata === 'string' ? options.metadata : JSON.stringify(options.metadata));
  }
  for (const [key, value] of Object.entries(options.extra ?? {})) form.append(key, value);
  if (options.bytes !== undefined) {
    form.append(
      'file',
      new Blob([options.bytes], { type: options.fileType ?? 'application/octet-stream' }),
      options.filename ?? 'file.bin',
    );
  }
  return form;
}

/** POST /artifacts (or PUT /artifacts/{id} with `id`) as multipart/form-data. */
export function sendForm(client: Api, options: FormOptions & { id?: string }): Promise<ApiResponse> {
  const method = options.id === undefined ? 'POST' : 'PUT';
  const url = options.id === undefined ? '/api/v1/artifacts' : `/api/v1/artifacts/${options.id}`;
  return client.request(method, url, { body: formOf(options) as unknown as string, raw: true, headers: options.headers });
}

/** Creates an artifact and returns its response data (fails the test otherwise). */
export async function createArtifact(client: Api, options: FormOptions): Promise<any> {
  const res = await sendForm(client, options);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body.data;
}

export interface Downloaded {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
}

/** GET the download as bytes, with the response for its headers. */
export async function download(client: Api, url: string, headers: Record<string, string> = {}, key?: string | null): Promise<Downloaded> {
  const full = url.startsWith('http') ? url : client.baseUrl + url;
  const h: Record<string, string> = { ...headers };
  const useKey = key === undefined ? client.key : key;
  if (useKey !== null) h.authorization = `Bearer ${useKey}`;
  const response = await fetch(full, { headers: h });
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { status: response.status, headers: response.headers, bytes, text: new TextDecoder().decode(bytes) };
}

/**
 * Everything in the server's blob store (committed blobs and staging leftovers): files under the
 * data dir on SQLite; on PostgreSQL the `blobs` rows (`sha256/<sha>`), staged chunk sets
 * (`tmp/<id>`) and chunks that belong to neither (`orphan/<id>`).
 */
export async function blobFiles(server: TestServer): Promise<string[]> {
  const { db, caps } = server.app.platform.database;
  if (caps.kind === 'postgres') {
    const named = await db.selectFrom('blobs').select(['sha256', 'blob_id']).execute();
    const staged = await db.selectFrom('blob_staging').select('blob_id').execute();
    const chunkSets = await db.selectFrom('blob_chunks').select('blob_id').distinct().execute();
    const known = new Set([...named.map((r) => r.blob_id), ...staged.map((r) => r.blob_id)]);
    return [
      ...named.map((r) => `sha256/${r.sha256}`),
      ...staged.map((r) => `tmp/${r.blob_id}`),
      ...chunkSets.filter((r) => !known.has(r.blob_id)).map((r) => `orphan/${r.blob_id}`),
    ].sort();
  }
  const root = path.join(server.database.dataDir, 'blobs');
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}

/** Whether the blob store (a file on SQLite, `blobs` on PostgreSQL) holds the content. */
export async function blobExists(server: TestServer, sha: string): Promise<boolean> {
  const { db, caps } = server.app.platform.database;
  if (caps.kind === 'postgres')
    return (await db.selectFrom('blobs').select('sha256').where('sha256', '=', sha).executeTakeFirst()) !== undefined;
  return fs.existsSync(path.join(server.database.dataDir, 'blobs', 'sha256', sha.slice(0, 2), sha));
}

/** Where the server keeps a content: a database row (contents up to the inline limit), the blob store, both or neither. */
export async function storedContent(server: TestServer, sha: string): Promise<{ inline: boolean; file: boolean }> {
  const row = await server.app.platform.database.db
    .selectFrom('artifact_contents')
    .select('sha256')
    .where('sha256', '=', sha)
    .executeTakeFirst();
  return { inline: row !== undefined, file: await blobExists(server, sha) };
}

/** True while the server keeps the content anywhere. */
export async function contentExists(server: TestServer, sha: string): Promise<boolean> {
  const stored = await storedContent(server, sha);
  return stored.inline || stored.file;
}

/** The sha256 of every content kept in the database. */
export async function inlineContents(server: TestServer): Promise<string[]> {
  const rows = await server.app.platform.database.db.selectFrom('artifact_contents').select('sha256').orderBy('sha256').execute();
  return rows.map((r) => r.sha256);
}
