import { hash } from 'node:crypto';

/**
 * Hex SHA-256 of a string or bytes, in one call: a Hash object per call cost more than the
 * digest for key-sized inputs (1.2 against 0.45 µs, measured), and a bearer key is hashed on
 * every request.
 */
export function sha256Hex(data: Buffer | string): string {
  return hash('sha256', data, 'hex');
}
