import { randomBytes, randomFillSync } from 'node:crypto';

// Random bytes drawn in blocks: one syscall per 409 ids instead of one per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function random10(): Uint8Array {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const bytes = Uint8Array.from(pool.subarray(poolOffset, poolOffset + 10));
  poolOffset += 10;
  return bytes;
}

/** The id prefixes of design §2; one per kind of object. */
export type IdPrefix =
  | 'rtn' | 'exe' | 'prj' | 'tsk' | 'cmt' | 'act' | 'dep' | 'cap' | 'msg' | 'ses' | 'thr'
  | 'sub' | 'plan' | 'run' | 'trg' | 'art' | 'upl' | 'key' | 'req' | 'pk' | 'fire' | 'evt';

// Crockford base32: sortable as text, no ambiguous letters.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

let lastTime = -1;
let lastRandom: Uint8Array = new Uint8Array(10);

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function encodeRandom(bytes: Uint8Array): string {
  // 80 bits → 16 base32 characters.
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

function increment(bytes: Uint8Array): Uint8Array {
  const next = Uint8Array.from(bytes);
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i]! < 255) {
      next[i]! += 1;
      return next;
    }
    next[i] = 0;
  }
  return next;
}

/**
 * A prefixed, time-sortable id (ULID layout): ids made later in this process sort after
 * earlier ones, even within one millisecond, so "ORDER BY id" is creation order.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom);
  } else {
    lastTime = now;
    lastRandom = random10();
  }
  return `${prefix}_${encodeTime(Math.max(now, lastTime))}${encodeRandom(lastRandom)}`.toLowerCase();
}

/** Secret tokens (API keys, webhook tokens): 32 random bytes, base64url. */
export function newSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}
