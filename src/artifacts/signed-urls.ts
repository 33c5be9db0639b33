import type { Clock } from '../kernel/clock.js';
import { Forbidden } from '../kernel/errors.js';
import { HmacSigner } from '../kernel/hmac-signer.js';

/** The proof a signed or upload URL carries (query `expires`, Unix seconds, and `signature`). */
export interface UrlProof {
  expires: number;
  signature: string;
}

/**
 * The URLs that work without credentials until they expire: a signed URL downloads one version,
 * an upload URL takes the bytes of one upload intent. Each signs what it opens and its expiry
 * with the cluster-wide key, so any node checks a URL another made.
 */
export class SignedUrls {
  private readonly signer: HmacSigner;

  constructor(
    private readonly deps: {
      clock: Clock;
      /** The HMAC key of signed and upload URLs, the same on every node. */
      signingKey: () => Promise<string>;
      publicUrl: () => string;
    },
  ) {
    this.signer = new HmacSigner(deps.signingKey);
  }

  /** When a URL made now expires, in Unix seconds. */
  expiry(expiresInSeconds: number): number {
    return Math.floor(this.deps.clock.now() / 1000) + expiresInSeconds;
  }

  async downloadUrl(artifactId: string, version: number, expires: number): Promise<string> {
    const signature = await this.signer.sign(`download\n${artifactId}\n${version}\n${expires}`);
    return `${this.deps.publicUrl()}/api/v1/artifacts/signed/${encodeURIComponent(artifactId)}/${version}?expires=${expires}&signature=${signature}`;
  }

  /** 403 unless `proof` is a download URL's for this version, unexpired. */
  checkDownload(artifactId: string, version: number, proof: UrlProof): Promise<void> {
    return this.verify(`download\n${artifactId}\n${version}\n${proof.expires}`, proof);
  }

  async uploadUrl(uploadId: string, expires: number): Promise<string> {
    const signature = await this.signer.sign(`upload\n${uploadId}\n${expires}`);
    return `${this.deps.publicUrl()}/api/v1/artifacts/uploads/${uploadId}?expires=${expires}&signature=${signature}`;
  }

  /** 403 unless `proof` is this upload's URL's, unexpired. */
  checkUpload(uploadId: string, proof: UrlProof): Promise<void> {
    return this.verify(`upload\n${uploadId}\n${proof.expires}`, proof);
  }

  private async verify(message: string, proof: UrlProof): Promise<void> {
    if (!(await this.signer.verify(message, proof.signature))) throw new Forbidden('The URL signature is not valid');
    if (proof.expires * 1000 <= this.deps.clock.now()) throw new Forbidden('The URL has expired');
  }
}
