import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signs short messages with a cluster-wide secret (HMAC-SHA256, base64url) for links that
 * authenticate by themselves: artifacts' signed URLs, approval links. The secret is read once,
 * on first use, and read again after a failed read.
 */
export class HmacSigner {
  private key: Promise<string> | null = null;

  constructor(private readonly readKey: () => Promise<string>) {}

  /** A synchronous signer, for callers that sign many messages in one go. */
  async signer(): Promise<(message: string) => string> {
    this.key ??= this.readKey().catch((err: unknown) => {
      this.key = null;
      throw err;
    });
    const key = await this.key;
    return (message) => createHmac('sha256', key).update(message).digest('base64url');
  }

  async sign(message: string): Promise<string> {
    return (await this.signer())(message);
  }

  /** Whether `signature` is the signature of `message`, compared in constant time. */
  async verify(message: string, signature: string): Promise<boolean> {
    const expected = Buffer.from(await this.sign(message));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }
}
