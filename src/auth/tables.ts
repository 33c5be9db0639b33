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
}
