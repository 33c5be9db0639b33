import { Forbidden, InvalidRequest } from '../kernel/errors.js';

/**
 * Who is calling (design §3): an admin (everything) or an agent (acts as its own agent_id).
 * `actor` is what activity logs record for the caller.
 */
export interface Principal {
  readonly role: 'admin' | 'agent';
  /** The agent this principal acts as; null for an admin key not bound to an agent. */
  readonly agentId: string | null;
  /** The API key used, or null for a signed request. */
  readonly keyId: string | null;
  /**
   * The agent API key this principal's access hangs on: the key used, or for a signed request
   * the key that registered the public key it was signed with. Null for admin keys and for
   * public keys an admin registered (or registered before this was recorded). Public keys an
   * agent registers record it, and go when it is revoked.
   */
  readonly grantingKeyId: string | null;
  readonly actor: string;
  /** Rate-limit bucket: the agent id when there is one, else the key. */
  readonly bucket: string;
}

export function isAdmin(principal: Principal): boolean {
  return principal.role === 'admin';
}

export function requireAdmin(principal: Principal): void {
  if (!isAdmin(principal)) throw new Forbidden('This endpoint needs an admin key');
}

/** Agents act only as themselves; admins may act as anyone. */
export function assertActsAs(principal: Principal, agentId: string): void {
  if (isAdmin(principal)) return;
  if (principal.agentId !== agentId) {
    throw new Forbidden(`Agent '${principal.agentId}' cannot act as agent '${agentId}'`);
  }
}

/**
 * The agent a request is about: the caller itself when it names none, else the named one
 * (checked with assertActsAs). An admin without an agent binding must name one.
 */
export function actingAgent(principal: Principal, requested: string | undefined, field = 'agent_id'): string {
  if (requested !== undefined) {
    assertActsAs(principal, requested);
    return requested;
  }
  if (principal.agentId !== null) return principal.agentId;
  throw InvalidRequest.field(field, 'is required when the caller is not an agent');
}
