import type { Generated } from 'kysely';
import type { Role } from './permissions.js';

export interface ApiKeysTable {
  id: string;
  name: string | null;
  role: Role;
  agent_id: string | null;
  key_hash: string;
  prefix: string;
  created_at: number;
  revoked_at: number | null;
  /** JSON array of permission names narrowing the role; null: the whole role. */
  scopes: string | null;
  expires_at: number | null;
  last_used_at: number | null;
  /** The user the key acts as (its role at most the user's); null: an agent's or the platform's key. */
  user_id: string | null;
}

export interface UsersTable {
  id: string;
  /** Unique; what `user:<username>` approvers name. */
  username: string;
  display_name: string | null;
  /** Any role but agent. */
  role: Role;
  /** `scrypt$N$r$p$salt$hash` (base64); null: the user signs in with keys only. */
  password_hash: string | null;
  disabled_at: number | null;
  /** The OIDC provider and the user's `sub` there (migration 0031); null for users without OIDC sign-in. */
  oidc_issuer: string | null;
  oidc_subject: string | null;
  created_at: number;
  updated_at: number;
}

/** The console's sessions: a user's (signed in with a password) or an API key's (exchanged for a session). */
export interface AuthSessionsTable {
  id: string;
  /** sha256 of the session token (the cookie); the token itself is never stored. */
  token_hash: string;
  user_id: string | null;
  key_id: string | null;
  created_at: number;
  /** Slides forward with use (written at most about once a minute, see AuthService). */
  expires_at: number;
}

/** One wrong password per row; `bucket` is a hash of the username and the client address. */
export interface SignInFailuresTable {
  bucket: string;
  failed_at: number;
}

export interface AgentPublicKeysTable {
  id: string;
  agent_id: string;
  public_key: string;
  fingerprint: string;
  /** The agent API key that registered it (its revocation deletes it); null: an admin's, or unknown (older rows). */
  registered_by_key_id: string | null;
  created_at: number;
}

export interface SignatureNoncesTable {
  signature_hash: string;
  expires_at: number;
}

export interface SettingsTable {
  name: string;
  value: string;
  updated_at: Generated<number>;
}

/** The auth tables as Kysely sees them; db/schema.ts joins every domain's into one Database. */
export interface AuthTables {
  api_keys: ApiKeysTable;
  agent_public_keys: AgentPublicKeysTable;
  signature_nonces: SignatureNoncesTable;
  settings: SettingsTable;
  users: UsersTable;
  auth_sessions: AuthSessionsTable;
  sign_in_failures: SignInFailuresTable;
}
