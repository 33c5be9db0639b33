import type { HmacSigner } from '../kernel/hmac-signer.js';
import { NotFound } from '../kernel/errors.js';

/** How long a link to a human step without its own timeout stays valid. */
export const APPROVAL_LINK_TTL_MS = 7 * 24 * 3600_000;

/** What an approval link lets its holder decide: one wait of one human step. */
export interface ApprovalClaim {
  runId: string;
  stepId: string;
  /** The step's wait (its `wait_id`): a link to an earlier wait (before a redrive) decides nothing now. */
  waitId: string;
  /** Unix ms. */
  expiresAt: number;
  /**
   * Who the link decides as: an agent id (the link in that approver's inbox message) or
   * `user:<username>` (a link made for that person). Null for the event's link, which decides
   * nothing by itself: everyone who reads the event log sees it, so a person signs in to decide.
   */
  approver: string | null;
}

interface ClaimText {
  r: string;
  s: string;
  a: string;
  e: number;
  w?: string;
}

/**
 * Approval links: `{public url}/console/approve/{token}`, the token a claim and its HMAC, so that
 * it authenticates by itself and needs no row. Single use comes from the step:
 * a link decides only while its attempt of the step waits.
 */
export class ApprovalLinks {
  constructor(
    private readonly signer: HmacSigner,
    private readonly publicUrl: () => string,
  ) {}

  /** A synchronous link maker, for a save that makes several links at once. */
  async linker(): Promise<(claim: ApprovalClaim) => string> {
    const sign = await this.signer.signer();
    const base = this.publicUrl();
    return (claim) => {
      const text: ClaimText = {
        r: claim.runId,
        s: claim.stepId,
        a: claim.waitId,
        e: claim.expiresAt,
        ...(claim.approver ? { w: claim.approver } : {}),
      };
      const payload = Buffer.from(JSON.stringify(text)).toString('base64url');
      return `${base}/console/approve/${payload}.${sign(payload)}`;
    };
  }

  /** The claim of a token this server signed; 404 for anything else (no hint of why). */
  async read(token: string): Promise<ApprovalClaim> {
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined || !(await this.signer.verify(payload, signature)))
      throw new NotFound('Approval link');
    const text = JSON.parse(Buffer.from(payload, 'base64url').toString()) as ClaimText;
    return { runId: text.r, stepId: text.s, waitId: text.a, expiresAt: text.e, approver: text.w ?? null };
  }
}
