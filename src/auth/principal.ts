import { Forbidden, InvalidRequest } from '../kernel/errors.js';
import type { AuditActor } from '../kernel/request-scope.js';
import { authorize, type Permission, type Requirement, type Role } from './permissions.js';

/**
 * Who is calling: an agent (acts only as its own agent_id and changes only what it created), the
 * admin, a user (a person: signed in, or through a key bound to them), or another key (an
 * operator, approver or viewer key: acts for the platform). What any may do is its
 * `permissions`: its role's, narrowed by the key's scopes. `actor` is what activity logs record
 * for the caller.
 */
export interface Principal {
  readonly kind: 'admin' | 'agent' | 'key' | 'user';
  readonly role: Role;
  readonly permissions: ReadonlySet<Permission>;
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
  /** The person this principal acts as (kind 'user'); null for every other kind. */
  readonly user: { readonly id: string; readonly username: string } | null;
  /** The console session the request came with (its cookie); null for keys and signatures. */
  readonly session: { readonly id: string; readonly expiresAt: number } | null;
  readonly actor: string;
  /** Rate-limit bucket: the agent or user when there is one, else the key. */
  readonly bucket: string;
}

/**
 * The credential a connection opened by this principal hangs on, which a revocation ends
 * (OpenConnections): its session, else its API key; null for a signed request.
 */
export function credentialOf(principal: Principal): string | null {
  return principal.session?.id ?? principal.keyId;
}

/** Not confined to one agent: acts as any agent and changes any object its permissions reach. */
export function actsForPlatform(principal: Pick<Principal, 'kind'>): boolean {
  return principal.kind !== 'agent';
}

/** Agents act only as themselves; admins may act as anyone. */
export function assertActsAs(principal: Principal, agentId: string): void {
  if (actsForPlatform(principal)) return;
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

/** What a route or MCP tool declares it needs (see `authorizeDeclared`). */
export interface Declared {
  permission: Requirement;
  /** An agent acting on itself (this agent id) needs no `permission`: its own signing keys. */
  self?: string;
  /**
   * Deciding a human step: an agent may lack `permission` when the step names it among its
   * approvers, which only the step can tell (the run engine checks it).
   */
  orNamedApprover?: boolean;
  /** A user may lack `permission` acting on what is theirs (their own keys), which only the service can tell. */
  orOwnUser?: boolean;
}

/** The one authorization point: every route and MCP tool passes its declaration here. Throws 403 naming the permission. */
export function authorizeDeclared(principal: Principal, declared: Declared): void {
  const { permission } = declared;
  if (permission === 'authenticated' || principal.permissions.has(permission)) return;
  if (principal.kind === 'agent' && (declared.orNamedApprover || (declared.self !== undefined && declared.self === principal.agentId)))
    return;
  if (principal.kind === 'user' && declared.orOwnUser) return;
  authorize(principal.permissions, permission);
}

const ANONYMOUS: AuditActor = { kind: 'anonymous', id: null, key_id: null };

/** The principal as the audit log names it: its kind, its actor (agent id, `admin`, `key:…`, a user) and the key it used. */
export function auditActorOf(principal: Principal | null): AuditActor {
  return principal ? { kind: principal.kind, id: principal.actor, key_id: principal.keyId } : ANONYMOUS;
}
