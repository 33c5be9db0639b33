import type { Readable } from 'node:stream';
import { InvalidRequest } from '../kernel/errors.js';
import { isJsonObject, refuseUnstorable } from '../kernel/json.js';
import type { StagedBlob } from './blob-store.js';
import { isContentType, MAX_NAME_LENGTH } from './schemas.js';

/*
 * The multipart form of a create or an update, read part by part, and the checks on what it
 * carries as text: the TypeBox schemas never see a form's fields, so their rules are applied here.
 */

/** One part of a multipart body, in the order the client sent them. */
export type FormPart =
  | { kind: 'field'; name: string; value: string; truncated: boolean }
  | { kind: 'file'; name: string; filename: string; mimetype: string; content: Readable | Buffer };

/** A multipart body, streamed or read whole; the HTTP layer adapts its parser to this. */
export interface IncomingForm {
  parts: AsyncIterable<FormPart>;
  /** Resolves once the whole body has been read; throws when the body is not what the request signed. */
  verify(): Promise<void>;
}

/** What a form carried: its fields, and its file's bytes, staged. */
export interface ReadForm {
  fields: Map<string, string>;
  staged?: StagedBlob;
  file?: { filename: string; mimetype: string };
}

const FORM_FIELDS = new Set(['name', 'content_type', 'metadata']);

/**
 * A JSON object given as text (a form field or a query parameter), or a 400 naming the field.
 * A NUL or an unpaired surrogate, escaped in the text, is refused: PostgreSQL's jsonb holds neither.
 */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw InvalidRequest.field(field, 'must be valid JSON');
  }
  if (!isJsonObject(value)) throw InvalidRequest.field(field, 'must be a JSON object');
  // JSON text in a form field or the query: the shared refusal of the HTTP layer never saw it.
  refuseUnstorable(value, field);
  return value;
}

export function checkName(name: string): string {
  if (name.length < 1 || name.length > MAX_NAME_LENGTH) {
    throw InvalidRequest.field('name', `must be 1 to ${MAX_NAME_LENGTH} characters`);
  }
  refuseUnstorable(name, 'name');
  return name;
}

/** A form's type (its `content_type` field, else its file part's own type), by the schemas' rule. */
export function checkContentType(type: string): string {
  if (!isContentType(type)) {
    throw InvalidRequest.field(
      'content_type',
      'must be a MIME type of printable ASCII (at most 255 characters), such as text/plain or text/plain; charset=utf-8',
    );
  }
  return type;
}

/** Streams the parts of a form: the one `file` to `stage`, the fields into a map. */
export async function readForm(form: IncomingForm, stage: (content: Readable | Buffer) => Promise<StagedBlob>): Promise<ReadForm> {
  const fields = new Map<string, string>();
  let staged: StagedBlob | undefined;
  let file: { filename: string; mimetype: string } | undefined;
  try {
    for await (const part of form.parts) {
      if (part.kind === 'file') {
        if (part.name !== 'file') throw InvalidRequest.field(part.name, 'is not a known field; send the content as "file"');
        if (staged) throw InvalidRequest.field('file', 'must be sent once');
        staged = await stage(part.content);
        file = { filename: part.filename, mimetype: part.mimetype };
        continue;
      }
      if (!FORM_FIELDS.has(part.name)) throw InvalidRequest.field(part.name, 'is not a known field');
      if (fields.has(part.name)) throw InvalidRequest.field(part.name, 'must be sent once');
      if (part.truncated) throw InvalidRequest.field(part.name, 'is too long');
      fields.set(part.name, part.value);
    }
    await form.verify();
  } catch (err) {
    await staged?.discard();
    throw err;
  }
  return { fields, staged, file };
}
