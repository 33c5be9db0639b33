import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { ListResourcesRequestSchema, ListResourceTemplatesRequestSchema, McpError, ReadResourceRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Principal } from '../auth/index.js';
import { AppError, NotFound } from '../kernel/errors.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { artifactUri, isTextual, readArtifact } from './artifact-content.js';
import type { ToolServices } from './tools/index.js';

/** resources/read returns at most this many bytes of an artifact (base64 makes a binary one a third larger). */
export const MAX_RESOURCE_BYTES = 1024 * 1024;
/** resources/list names at most this many of each kind, the most recent. */
export const RECENT_RESOURCES = 50;

const SCHEME = 'switchboard://';
const JSON_TYPE = 'application/json';

/** One entry of resources/list. */
export interface ResourceEntry {
  uri: string;
  name: string;
  title?: string;
  mimeType?: string;
  size?: number;
}

export type ResourceContents = { uri: string; mimeType: string; text: string } | { uri: string; mimeType: string; blob: string };

/** A kind of resource: its URI template (`switchboard://<kind>/{id}`), its recent ones, and a reader. */
export interface Resource {
  uriTemplate: string;
  name: string;
  title: string;
  description: string;
  mimeType?: string;
  list(principal: Principal): Promise<ResourceEntry[]>;
  read(uri: string, principal: Principal): Promise<ResourceContents[]>;
}

/**
 * The newest `count` items of a list the service pages oldest first: the page's total says
 * where the last page starts (a second query when there are more than `count`).
 */
async function newest<T>(list: (window: Page) => Promise<Paged<T>>, count: number): Promise<T[]> {
  const first = await list({ limit: count, offset: 0 });
  const items = first.total <= count ? first.items : (await list({ limit: count, offset: first.total - count })).items;
  return items.reverse();
}

/** The id in `switchboard://<kind>/<id>`. */
function idIn(uri: string, kind: string): string {
  const prefix = `${SCHEME}${kind}/`;
  const id = uri.slice(prefix.length);
  if (!uri.startsWith(prefix) || id.length === 0 || id.includes('/')) throw new NotFound('Resource', uri);
  return decodeURIComponent(id);
}

/** A resource whose content is one JSON object, read by id from its service (the object its HTTP GET returns). */
function jsonResource<T>(kind: string, spec: {
  title: string;
  description: string;
  recent(principal: Principal): Promise<T[]>;
  entry(item: T): { id: string; name: string };
  get(id: string, principal: Principal): Promise<T>;
}): Resource {
  const uriOf = (id: string) => `${SCHEME}${kind}/${encodeURIComponent(id)}`;
  return {
    uriTemplate: `${SCHEME}${kind}/{id}`,
    name: kind,
    title: spec.title,
    description: spec.description,
    mimeType: JSON_TYPE,
    async list(principal) {
      return (await spec.recent(principal)).map((item) => {
        const { id, name } = spec.entry(item);
        return { uri: uriOf(id), name, mimeType: JSON_TYPE };
      });
    },
    async read(uri, principal) {
      const item = await spec.get(idIn(uri, kind), principal);
      return [{ uri, mimeType: JSON_TYPE, text: JSON.stringify(item, null, 2) }];
    },
  };
}

/**
 * Runs, plans, tasks and artifacts as MCP resources (issue 26). Each reads through its domain
 * service as the HTTP API does, with the same access: runs, plans and tasks are visible to
 * every key, artifacts to their owner, whom they are shared with (or their groups) and admins.
 */
export function buildResources({ coordination, tasks, artifacts }: ToolServices): Resource[] {
  return [
    jsonResource('runs', {
      title: 'Runs',
      description: 'A run of a plan with its steps (status, input, output, error of each)',
      recent: async () => (await coordination.listRuns({}, { limit: RECENT_RESOURCES, offset: 0 })).items,
      entry: (run) => ({ id: run.id, name: `${run.id} (${run.status})` }),
      get: (id) => coordination.getRun(id),
    }),
    jsonResource('plans', {
      title: 'Plans',
      description: 'A plan (its current version) with its steps',
      recent: () => newest((window) => coordination.listPlans(window), RECENT_RESOURCES),
      entry: (plan) => ({ id: plan.id, name: plan.alias }),
      get: (id) => coordination.getPlan(id),
    }),
    jsonResource('tasks', {
      title: 'Tasks',
      description: 'A task with its status, assignee and dependencies',
      recent: () => newest((window) => tasks.listTasks({}, window), RECENT_RESOURCES),
      entry: (task) => ({ id: task.id, name: task.title }),
      get: (id) => tasks.getTask(id),
    }),
    {
      uriTemplate: `${SCHEME}artifacts/{id}`,
      name: 'artifacts',
      title: 'Artifacts',
      description: `The content of an artifact's current version: text for text and JSON, base64 otherwise; at most ${MAX_RESOURCE_BYTES} bytes`,
      async list(principal) {
        const recent = await newest((window) => artifacts.list(principal, {}, window), RECENT_RESOURCES);
        return recent.map((artifact) => ({ uri: artifactUri(artifact.id), name: artifact.name, mimeType: artifact.content_type, size: artifact.size_bytes }));
      },
      async read(uri, principal) {
        const content = await readArtifact(artifacts, principal, idIn(uri, 'artifacts'), MAX_RESOURCE_BYTES);
        const mimeType = content.content_type;
        return [isTextual(mimeType) ? { uri, mimeType, text: content.bytes.toString('utf8') } : { uri, mimeType, blob: content.bytes.toString('base64') }];
      },
    },
  ];
}

/** JSON-RPC error for a resource that does not exist (MCP spec, resources). */
const RESOURCE_NOT_FOUND = -32002;
const INVALID_PARAMS = -32602;

/** A failed read as a protocol error carrying the API's code and message (its `data` has both). */
function protocolError(err: unknown, logger: Logger): McpError {
  if (err instanceof AppError) {
    return new McpError(err.code === 'not_found' ? RESOURCE_NOT_FOUND : INVALID_PARAMS, `${err.code}: ${err.message}`, { code: err.code, message: err.message });
  }
  logger.error({ err }, 'MCP resource read failed');
  return new McpError(-32603, 'internal_error: Internal error', { code: 'internal_error' });
}

/** resources/list: the recent resources of every kind the caller may see. */
export async function listResources(resources: Resource[], principal: Principal, logger: Logger): Promise<ResourceEntry[]> {
  try {
    return (await Promise.all(resources.map((resource) => resource.list(principal)))).flat();
  } catch (err) {
    throw protocolError(err, logger);
  }
}

/** resources/read: the contents at `uri`, read by the kind its URI names. */
export async function readResource(resources: Resource[], uri: string, principal: Principal, logger: Logger): Promise<ResourceContents[]> {
  try {
    const resource = resources.find((candidate) => uri.startsWith(candidate.uriTemplate.replace('{id}', '')));
    if (!resource) throw new NotFound('Resource', uri);
    return await resource.read(uri, principal);
  } catch (err) {
    throw protocolError(err, logger);
  }
}

/** Serves resources/list, resources/templates/list and resources/read on an MCP server (capability `resources`). */
export function serveResources(server: Server, resources: Resource[], principalOf: (authInfo: AuthInfo | undefined) => Principal, logger: Logger): void {
  server.setRequestHandler(ListResourcesRequestSchema, async (_request, extra) => ({ resources: await listResources(resources, principalOf(extra.authInfo), logger) }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: resources.map(({ uriTemplate, name, title, description, mimeType }) => ({ uriTemplate, name, title, description, mimeType })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (request, extra) => ({
    contents: await readResource(resources, request.params.uri, principalOf(extra.authInfo), logger),
  }));
}
