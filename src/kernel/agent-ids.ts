/**
 * What may be an agent id. Agents share one namespace with the other principals that events,
 * message sources and decisions name: an agent called `admin` read and cancelled the A2A tasks
 * sent with the admin key, and its messages carried `source: "admin"`. So the names the
 * platform acts under are no agent's, whatever their case:
 * - `admin`: an admin key without an agent (principal actor, task requester, message source);
 * - `system`: events no request caused (kernel/ports.ts SYSTEM_ACTOR);
 * - `switchboard`: messages the platform sends (run steps, routine executions, unblocked tasks);
 * - `cli`: keys created and revoked with the command line;
 * - `approval_link`: who decided through a link sent to no one in particular, in runs decided before such links stopped deciding.
 * Nor may an agent id start with a prefix that names people and roles (approvers `user:`,
 * `role:`, and the explicit `agent:`) or another creator (`key:<id>` for a platform key,
 * `trigger:<id>` for a trigger's runs): an agent so named would own what they created.
 */
export const RESERVED_AGENT_IDS = ['admin', 'system', 'switchboard', 'cli', 'approval_link'] as const;
export const RESERVED_AGENT_ID_PREFIXES = ['user:', 'role:', 'agent:', 'key:', 'trigger:'] as const;

/** `admin` → `[aA][dD][mM][iI][nN]`: JSON Schema patterns take no flags. */
function anyCase(text: string): string {
  return [...text].map((c) => (/[a-z]/.test(c) ? `[${c}${c.toUpperCase()}]` : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('');
}

/**
 * Agent ids are chosen by operators: letters, digits and `._:@-`, at most 128 characters, not
 * a reserved name, not starting with a reserved prefix.
 */
export const AGENT_ID_PATTERN =
  `^(?!(?:${RESERVED_AGENT_IDS.map(anyCase).join('|')})$)` +
  `(?!(?:${RESERVED_AGENT_ID_PREFIXES.map(anyCase).join('|')}))` +
  '[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$';

/** What a client is told when an agent id fails AGENT_ID_PATTERN. */
export const AGENT_ID_RULE =
  `must be an agent id: a letter or digit, then letters, digits and ._:@- (at most 128 in all); ` +
  `not ${RESERVED_AGENT_IDS.join(', ')} (reserved for the platform), nor starting with ${RESERVED_AGENT_ID_PREFIXES.join(', ')}`;
