import type { Logger } from 'pino';
import type { Principal } from '../../auth/index.js';
import { AppError, InvalidRequest } from '../../kernel/errors.js';
import { currentScope } from '../../kernel/request-scope.js';
import { artifactTools } from './artifacts.js';
import { coordinationTools } from './coordination.js';
import type { GroupTool, ResourceLink, ToolOutput, ToolServices } from './define.js';
import { discoveryTools } from './discovery.js';
import { messagingTools } from './messaging.js';
import { routineTools } from './routines.js';
import { taskTools } from './tasks.js';

export type { ResourceLink, ToolAnnotations, ToolOutput, ToolServices } from './define.js';

/** The tool groups a client may narrow the list to (`/core/mcp?tools=routines,tasks`). */
export const TOOL_GROUPS = ['routines', 'tasks', 'messaging', 'discovery', 'coordination', 'artifacts'] as const;
export type ToolGroup = (typeof TOOL_GROUPS)[number];

export interface Tool extends GroupTool {
  group: ToolGroup;
}

const BUILDERS: Record<ToolGroup, (services: ToolServices) => GroupTool[]> = {
  routines: routineTools,
  tasks: taskTools,
  messaging: messagingTools,
  discovery: discoveryTools,
  coordination: coordinationTools,
  artifacts: artifactTools,
};

/**
 * The MCP tools, of the given groups (default: all). Each calls the
 * domain service method its HTTP route calls, with its arguments checked against the route's
 * own TypeBox schemas and its output described by the route's response schema.
 */
export function buildTools(services: ToolServices, groups: readonly ToolGroup[] = TOOL_GROUPS): Tool[] {
  return groups.flatMap((group) => BUILDERS[group](services).map((tool) => ({ ...tool, group })));
}

/**
 * The groups named by a `tools` query parameter (comma-separated), or every group when it is
 * absent. An unknown group is refused rather than ignored: a typo would hide every tool.
 */
export function parseToolGroups(value: string | string[] | undefined): readonly ToolGroup[] {
  if (value === undefined) return TOOL_GROUPS;
  const names = [value]
    .flat()
    .flatMap((list) => list.split(','))
    .map((name) => name.trim());
  const unknown = names.filter((name) => !(TOOL_GROUPS as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw InvalidRequest.field('tools', `unknown tool group '${unknown.join(', ')}'; the groups are: ${TOOL_GROUPS.join(', ')}`);
  }
  return [...new Set(names)] as ToolGroup[];
}

/** What the server tells a client at initialize: what Switchboard is and where to start. */
export const instructions =
  'Switchboard is a control plane for software agents: agents register capabilities, send each other messages ' +
  'through inboxes, and run multi-step plans that may wait for a person; routines schedule work, tasks track it and ' +
  'artifacts store its files. Start with find_agents (who can do what) and send_message / receive_messages ' +
  '(talk to an agent), list_plans and start_run (run a plan), list_pending_approvals (steps waiting for you; ' +
  'request_step_input asks your user for the data a step waits for), and ' +
  'list_tasks. Runs, plans, tasks and artifacts are also resources (switchboard://runs/{id} …). Errors carry a code ' +
  '(invalid_request, forbidden, not_found, conflict…) and a message saying what to fix.';

export interface ToolResult {
  [key: string]: unknown;
  content: ({ type: 'text'; text: string } | ResourceLink)[];
  structuredContent?: ToolOutput;
  isError?: boolean;
}

function errorResult(code: string, message: string, details?: unknown): ToolResult {
  const error: Record<string, unknown> = { code, message };
  if (details !== undefined) error.details = details;
  // No structuredContent: it would have to match the tool's outputSchema, and an error does not.
  return { content: [{ type: 'text', text: JSON.stringify({ error }, null, 2) }], isError: true };
}

/**
 * Runs a tool. Domain errors become tool errors the model can read and act on (the API's
 * code, message and field problems), never protocol errors, and a refusal is audited as a
 * denial of `mcp.<tool>`; anything else is logged and reported as internal_error.
 */
export async function callTool(tool: Tool, args: unknown, principal: Principal, logger: Logger, signal?: AbortSignal): Promise<ToolResult> {
  try {
    const structuredContent = await tool.call(args, principal, signal);
    return {
      content: [{ type: 'text', text: JSON.stringify(structuredContent, null, 2) }, ...tool.links(structuredContent)],
      structuredContent,
    };
  } catch (err) {
    if (err instanceof AppError) {
      // The refusal travels inside a 200, where the HTTP layer's audit of 401/403 does not see it.
      if (err.status === 401 || err.status === 403) currentScope()?.denied?.(`mcp.${tool.name}`, err.status);
      return errorResult(err.code, err.message, err.details);
    }
    logger.error({ err, tool: tool.name }, 'MCP tool failed');
    return errorResult('internal_error', 'Internal error');
  }
}
