import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Users' passwords: scrypt with a 16-byte salt per password, through Node's async
 * scrypt, which runs on libuv's thread pool, so a sign-in never blocks the event loop (~50 ms of
 * one core each at these parameters). The parameters are stored with each hash, so raising them
 * later keeps older hashes verifiable.
 */
const PARAMETERS = { N: 16_384, r: 8, p: 1 } as const;
const KEY_BYTES = 64;
const SALT_BYTES = 16;
/** Twice what N and r need (128 × N × r = 16 MiB): Node's default cap is exactly 32 MiB. */
const MAX_MEMORY = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { ...options, maxmem: MAX_MEMORY }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `password` is the one `stored` was made from, compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

let decoy: Promise<string> | null = null;

/**
 * Spends what a real verification costs, for a username that has no password to check: an
 * unknown user takes as long to refuse as a wrong password.
 */
export async function verifyNothing(password: string): Promise<false> {
  decoy ??= hashPassword(randomBytes(SALT_BYTES).toString('base64'));
  await verifyPassword(password, await decoy);
  return false;
}

/** A password for a user created without one (the CLI prints it once): 24 random bytes, base64url. */
export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}
