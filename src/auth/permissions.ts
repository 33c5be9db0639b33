import { Forbidden } from '../kernel/errors.js';

/**
 * What a principal may do, as data: the catalogue of permissions (served at
 * GET /api/v1/auth/permissions), and the roles, each a named preset of them. Every route and MCP
 * tool declares the permission it needs, and `authorize` is the one place that checks it.
 */
export const PERMISSIONS = {
  'routines:read': 'Read routines and their executions',
  'routines:write': 'Create, change, pause, trigger and delete routines',
  'tasks:read': 'Read projects and tasks',
  'tasks:write': 'Create, change, claim and delete projects and tasks',
  'discovery:read': 'Find agents and read their capabilities',
  'discovery:write': 'Register capabilities and send heartbeats',
  'messaging:read': 'Receive messages, read threads and subscriptions',
  'messaging:write': 'Send, publish, acknowledge and subscribe',
  'messaging:admin': "Read any agent's inbox, dead letters, and redrive them",
  'plans:read': 'Read plans and triggers',
  'plans:write': 'Create, change and delete plans and triggers',
  'runs:read': 'Read runs, their steps, events and pending approvals',
  'runs:write': 'Start, cancel and redrive runs',
  'approvals:decide': 'Decide human_approval steps and submit human_input steps',
  'artifacts:read': 'Read and download artifacts',
  'artifacts:write': 'Upload, change, share and delete artifacts',
  'events:read': 'Read the event log and its streams',
  'webhooks:admin': 'Manage webhook subscriptions and their deliveries',
  'budgets:admin': 'Manage usage budgets, and resume the agents they paused',
  'keys:admin': 'Create, list and revoke API keys; manage any agent’s signing keys',
  'users:admin': 'Manage users',
  'audit:read': 'Read the audit log',
  'cluster:read': 'Read the cluster’s nodes',
  'metrics:read': 'Read the Prometheus metrics',
  'usage:read': 'Read usage totals (tokens and cost by agent, plan, run, model, day)',
  'usage:write': 'Record usage (an agent only its own)',
} as const;

export type Permission = keyof typeof PERMISSIONS;

export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[];

/** What a route or tool needs: a permission, or only that the caller is authenticated (whoami, the catalogue). */
export type Requirement = Permission | 'authenticated';

export const ROLE_NAMES = ['admin', 'operator', 'approver', 'viewer', 'agent'] as const;
export type Role = (typeof ROLE_NAMES)[number];

const READS = PERMISSION_NAMES.filter((name) => name.endsWith(':read'));

/** The roles as presets of the catalogue; the agent role is what agents could always do, but deciding human steps. */
export const ROLES: Record<Role, readonly Permission[]> = {
  admin: PERMISSION_NAMES,
  operator: PERMISSION_NAMES.filter((name) => name !== 'keys:admin' && name !== 'users:admin'),
  approver: [...READS, 'approvals:decide'],
  viewer: READS,
  agent: [
    'routines:read',
    'routines:write',
    'tasks:read',
    'tasks:write',
    'discovery:read',
    'discovery:write',
    'messaging:read',
    'messaging:write',
    'plans:read',
    'plans:write',
    'runs:read',
    'runs:write',
    'artifacts:read',
    'artifacts:write',
    'events:read',
    'usage:write',
  ],
};

export function isPermission(name: string): name is Permission {
  return Object.hasOwn(PERMISSIONS, name);
}

/**
 * What a key's `scopes` may name: its role's permissions, and for an agent key also
 * `approvals:decide` (an admin may let one agent decide human steps).
 */
export function grantable(role: Role): readonly Permission[] {
  return role === 'agent' ? [...ROLES.agent, 'approvals:decide'] : ROLES[role];
}

/** A key's permissions: its role's, or its `scopes` when it has some. */
export function permissionsOf(role: Role, scopes: readonly string[] | null): ReadonlySet<Permission> {
  if (scopes === null) return new Set(ROLES[role]);
  return new Set(grantable(role).filter((name) => scopes.includes(name)));
}

/** The permissions in `wanted` that `held` lacks. */
export function missingFrom(held: ReadonlySet<Permission>, wanted: Iterable<Permission>): Permission[] {
  return [...wanted].filter((name) => !held.has(name));
}

/** Throws 403 naming the permission when `held` lacks it. */
export function authorize(held: ReadonlySet<Permission>, needed: Requirement): void {
  if (needed === 'authenticated' || held.has(needed)) return;
  throw new Forbidden(`Missing permission '${needed}': the caller's role or key scopes do not grant it`);
}
