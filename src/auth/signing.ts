import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../kernel/sha256.js';

/**
 * Ed25519 request signing. The signed string is
 * `METHOD\nPATH_WITH_QUERY\nX-Timestamp\nhex(sha256(raw body))`; the signature is base64.
 */
export const SIGNATURE_WINDOW_MS = 300_000;

// DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

export const EMPTY_BODY_SHA256 = sha256Hex('');

export function signingString(method: string, pathWithQuery: string, timestamp: string, bodySha256: string): string {
  return `${method.toUpperCase()}\n${pathWithQuery}\n${timestamp}\n${bodySha256}`;
}

/**
 * Parses a public key given as base64 of the raw 32 bytes or as PEM; returns the raw bytes in
 * base64 (how we store it), or null when it is not an Ed25519 public key.
 */
export function normalizePublicKey(input: string): string | null {
  const text = input.trim();
  try {
    if (text.startsWith('-----BEGIN')) {
      const key = createPublicKey(text);
      if (key.asymmetricKeyType !== 'ed25519') return null;
      const der = key.export({ format: 'der', type: 'spki' });
      return der.subarray(der.length - 32).toString('base64');
    }
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return null;
    const raw = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
    if (raw.length !== 32) return null;
    toKeyObject(raw.toString('base64'));
    return raw.toString('base64');
  } catch {
    return null;
  }
}

export function toKeyObject(rawBase64: string): KeyObject {
  return createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, Buffer.from(rawBase64, 'base64')]),
    format: 'der',
    type: 'spki',
  });
}

/** Bytes of an Ed25519 signature; their canonical base64 is 86 characters and `==`. */
const SIGNATURE_BYTES = 64;

/**
 * The signature in an `X-Signature` header, or null unless the header is the canonical
 * standard base64 of exactly 64 bytes. `Buffer.from(text, 'base64')` skips junk characters and
 * missing padding, takes the url-safe alphabet and ignores the unused low bits, so many texts
 * decode to one signature: accepting them let a captured request replay under a re-encoded
 * signature: one signed send once became 51 deliveries.
 */
export function decodeSignature(text: string): Buffer | null {
  const bytes = Buffer.from(text, 'base64');
  return bytes.length === SIGNATURE_BYTES && bytes.toString('base64') === text ? bytes : null;
}

export function verifySignature(message: string, signature: Buffer, rawPublicKeyBase64: string): boolean {
  try {
    return verify(null, Buffer.from(message), toKeyObject(rawPublicKeyBase64), signature);
  } catch {
    return false;
  }
}
