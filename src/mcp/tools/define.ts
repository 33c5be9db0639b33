import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { ArtifactsService } from '../../artifacts/index.js';
import { authorizeDeclared, type Principal, type Requirement } from '../../auth/index.js';
import type { CoordinationServices } from '../../coordination/index.js';
import type { DiscoveryService } from '../../discovery/index.js';
import { validationError } from '../../http/error-handler.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, withIntegerMaximum } from '../../http/schemas.js';
import type { InboxService } from '../../messaging/index.js';
import type { RoutinesService } from '../../routines/index.js';
import type { TasksService } from '../../tasks/index.js';

/** The domain services the tools call, as the HTTP routes do. */
export interface ToolServices {
  routines: RoutinesService;
  tasks: TasksService;
  coordination: CoordinationServices;
  inbox: InboxService;
  discovery: DiscoveryService;
  artifacts: ArtifactsService;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

// Every tool acts inside Switchboard; those that hand work to agents (outside it) say so.
export const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const CREATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
export const UPDATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };
export const DELETE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
/** A decision moves the run on (a rejection fails it) and is made once: a second call is refused. */
export const DECIDE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };
/** Sends work to an agent (a message, a routine execution, a run's steps): its effects are the agent's. */
export const DISPATCH: ToolAnnotations = { ...CREATE, openWorldHint: true };

/** A tool's reply before it becomes an MCP result: always a JSON object (structuredContent). */
export type ToolOutput = Record<string, unknown>;

/** A pointer to an MCP resource (resources/read fetches it), for content too large or binary to inline. */
export interface ResourceLink {
  type: 'resource_link';
  uri: string;
  name: string;
  mimeType?: string;
  size?: number;
}

/** A tool as its group defines it (buildTools adds the group's name). */
export interface GroupTool {
  name: string;
  title: string;
  description: string;
  inputSchema: TObject;
  outputSchema: TObject;
  annotations: ToolAnnotations;
  /** What the caller needs, checked before the arguments (as a route's). */
  permission: Requirement;
  call(args: unknown, principal: Principal, signal?: AbortSignal): Promise<ToolOutput>;
  /** Resources the output points to, sent beside it as resource_link content. */
  links(output: ToolOutput): ResourceLink[];
}

export interface ToolDefinition<I extends TObject, O extends TObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: O;
  annotations: ToolAnnotations;
  /** What the caller needs: the permission of the HTTP route the tool stands for. */
  permission: Requirement;
  /** Deciding a human step: an agent the step names as an approver needs no `permission` (the engine checks). */
  orNamedApprover?: boolean;
  /** The service's answer: the object the HTTP route sends as `data` (its types are the service's, not the schema's). */
  run(args: Static<I>, principal: Principal, signal: AbortSignal): Promise<object>;
  links?(output: Static<O>): ResourceLink[];
}

// Arguments arrive as JSON, like HTTP bodies: validated the same way (no coercion, finite
// numbers, unknown fields rejected by the schemas themselves, defaults applied).
const ajv = addFormats.default(
  new Ajv.default({ removeAdditional: false, useDefaults: true, allErrors: true, strict: false, strictNumbers: true }),
);

/** Descriptions for the arguments whose route schemas carry none (path and query parameters). */
const ARGUMENT_DESCRIPTIONS: Record<string, string> = {
  limit: `Page size, 1 to ${MAX_PAGE_SIZE}; default ${DEFAULT_PAGE_SIZE}`,
  offset: 'Number of items to skip; default 0',
};

/**
 * A tool's input schema: the route's own TypeBox schema, closed to unknown arguments (a
 * misspelt filter is an error, not silently ignored), its integers bounded as the HTTP
 * routes' are, and with a description on every argument.
 */
export function toolInput<S extends TObject>(schema: S, descriptions: Record<string, string> = {}): S {
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([key, property]) => {
      const description = property.description ?? descriptions[key] ?? ARGUMENT_DESCRIPTIONS[key];
      const bounded = withIntegerMaximum(property);
      return [key, description === undefined ? bounded : { ...bounded, description }];
    }),
  );
  return { ...schema, properties, additionalProperties: false };
}

/** The output of a list tool: one page of the items the HTTP route lists, and how many there are in all. */
export function pagedOutput<T extends TSchema>(item: T) {
  return Type.Object({ items: Type.Array(item), total: Type.Integer({ description: 'Items that match, all pages together' }) });
}

/** Never aborted: for calls made without a signal (a tool's wait is then bounded by its own limits). */
const NEVER = new AbortController().signal;

/** A reader of a tool's arguments: checked against `schema` (defaults applied), or refused with the HTTP API's field errors. */
export function argumentsOf<I extends TObject>(schema: I): (args: unknown) => Static<I> {
  const validate = ajv.compile<Static<I>>(schema);
  return (args) => {
    const input = structuredClone(args ?? {});
    if (!validate(input)) throw validationError(validate.errors ?? [], 'arguments');
    return input;
  };
}

export function define<I extends TObject, O extends TObject>(definition: ToolDefinition<I, O>): GroupTool {
  const checked = argumentsOf(definition.input);
  return {
    name: definition.name,
    title: definition.title,
    description: definition.description,
    inputSchema: definition.input,
    outputSchema: definition.output,
    annotations: definition.annotations,
    permission: definition.permission,
    async call(args, principal, signal = NEVER) {
      authorizeDeclared(principal, { permission: definition.permission, orNamedApprover: definition.orNamedApprover });
      return (await definition.run(checked(args), principal, signal)) as ToolOutput;
    },
    links: (output) => definition.links?.(output as Static<O>) ?? [],
  };
}
