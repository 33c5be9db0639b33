import type { Readable } from 'node:stream';
import type { Principal } from '../auth/index.js';
import type { ArtifactsService } from '../artifacts/index.js';
import { PayloadTooLarge } from '../kernel/errors.js';

/** The MCP resource URI of an artifact (its current version). */
export const artifactUri = (id: string) => `switchboard://artifacts/${encodeURIComponent(id)}`;

/** Text a model can read as it is: text/*, JSON and XML, whatever their parameters (charset). */
export function isTextual(contentType: string): boolean {
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type.startsWith('text/') || /^application\/([\w.+-]+\+)?(json|xml)$/.test(type) || type === 'application/x-ndjson';
}

async function readAll(body: Readable | Buffer): Promise<Buffer> {
  if (Buffer.isBuffer(body)) return body;
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export interface ArtifactContent {
  id: string;
  version: number;
  name: string;
  content_type: string;
  bytes: Buffer;
}

/**
 * The bytes of an artifact's current version, through the artifacts service's streaming read
 * (and so its read access: owner, shared with the caller or its groups, or an admin). Over
 * `maxBytes` it is refused before anything is read: MCP messages carry content whole.
 */
export async function readArtifact(
  artifacts: ArtifactsService,
  principal: Principal,
  id: string,
  maxBytes: number,
  version?: number,
): Promise<ArtifactContent> {
  const download = await artifacts.download(principal, id, version);
  if (download.size_bytes > maxBytes) {
    throw new PayloadTooLarge(
      `Artifact '${id}' is ${download.size_bytes} bytes; MCP reads return at most ${maxBytes}: download it from /api/v1/artifacts/${id}/download instead`,
    );
  }
  return {
    id,
    version: download.version,
    name: download.name,
    content_type: download.content_type,
    bytes: await readAll(await download.open()),
  };
}
