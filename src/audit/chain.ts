import { sha256Hex } from '../kernel/sha256.js';
import type { AuditEntry } from './schemas.js';

/** The prev_hash of the first entry of a log never trimmed. */
export const GENESIS_HASH = '0'.repeat(64);

/** JSON with every object's keys in code-point order and no whitespace, as JSON.stringify writes values. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`).join(',')}}`;
}

/**
 * An entry's hash: hex SHA-256 of its prev_hash followed by the canonical JSON of the entry as
 * the API shows it, every field but `hash` (prev_hash included). Anyone holding the entries
 * (GET /api/v1/audit, oldest first) can recompute the chain: each entry's prev_hash is the hash
 * of the one before it, the first one's that of the anchor (or GENESIS_HASH).
 */
export function entryHash(entry: Omit<AuditEntry, 'hash'>): string {
  const { hash: _ignored, ...fields } = entry as AuditEntry;
  return sha256Hex(entry.prev_hash + canonicalJson(fields));
}
