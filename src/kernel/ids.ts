import { randomBytes, randomFillSync } from 'node:crypto';

// Random bytes drawn in blocks: one syscall per 409 ids instead of one per id.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** The next 40 random bits from the pool, as a number. */
function random40(): number {
  if (poolOffset + 5 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const value = pool.readUIntBE(poolOffset, 5);
  poolOffset += 5;
  return value;
}

/** The id prefixes, one per kind of object, so an id says what it names. */
export type IdPrefix =
  | 'rtn'
  | 'exe'
  | 'prj'
  | 'tsk'
  | 'cmt'
  | 'act'
  | 'dep'
  | 'cap'
  | 'msg'
  | 'ses'
  | 'thr'
  | 'sub'
  | 'plan'
  | 'run'
  | 'trg'
  | 'art'
  | 'upl'
  | 'key'
  | 'req'
  | 'pk'
  | 'fire'
  | 'evt'
  | 'whk'
  | 'whd'
  | 'node'
  | 'usr'
  | 'sess'
  | 'aud'
  | 'ntc'
  | 'ntf'
  | 'alr'
  | 'alt'
  | 'usg'
  | 'bdg';

// Crockford base32 in lower case: sortable as text, no ambiguous letters.
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const BITS_40 = 2 ** 40;

// Every pair of base32 characters, so 10 bits are encoded with one lookup.
const PAIRS = Array.from({ length: 1024 }, (_, i) => ALPHABET[i >> 5]! + ALPHABET[i & 31]!);
const BITS_30 = 2 ** 30;

/** A number below 2^40 as 8 base32 characters, most significant first. */
function encode40(value: number): string {
  const top = Math.floor(value / BITS_30);
  const rest = value % BITS_30;
  return PAIRS[top]! + PAIRS[rest >>> 20]! + PAIRS[(rest >>> 10) & 1023]! + PAIRS[rest & 1023]!;
}

// The last id's millisecond (and its 10 characters) and its 80 random bits as two 40-bit halves:
// an id in the same millisecond adds one to them, so it sorts after the one before.
let lastTime = -1;
let lastTimeText = '';
let high = 0;
let low = 0;

/**
 * A prefixed, time-sortable id (ULID layout: 10 characters of time, 16 of randomness): ids made
 * later in this process sort after earlier ones, even within one millisecond, so "ORDER BY id"
 * is creation order.
 */
export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now <= lastTime) {
    low += 1;
    if (low === BITS_40) {
      low = 0;
      high = (high + 1) % BITS_40;
    }
  } else {
    lastTime = now;
    // 50 bits of milliseconds: enough until the year 37,648.
    lastTimeText = PAIRS[Math.floor(now / BITS_40) % 1024]! + encode40(now % BITS_40);
    high = random40();
    low = random40();
  }
  return `${prefix}_${lastTimeText}${encode40(high)}${encode40(low)}`;
}

/** Secret tokens (API keys, webhook tokens): 32 random bytes, base64url. */
export function newSecret(prefix = ''): string {
  return prefix + randomBytes(32).toString('base64url');
}
