import type { Permission, Principal } from '../auth/index.js';
import { NotFound } from '../kernel/errors.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { artifactUri, isTextual, readArtifact } from './artifact-content.js';
import type { McpResource } from './server.js';
import type { ToolServices } from './tools/index.js';

/** resources/read returns at most this many bytes of an artifact (base64 makes a binary one a third larger). */
export const MAX_RESOURCE_BYTES = 1024 * 1024;
/** resources/list names at most this many of each kind, the most recent. */
export const RECENT_RESOURCES = 50;

const SCHEME = 'switchboard://';
const JSON_TYPE = 'application/json';

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
function jsonResource<T>(
  kind: string,
  spec: {
    title: string;
    permission: Permission;
    description: string;
    recent(principal: Principal): Promise<T[]>;
    entry(item: T): { id: string; name: string };
    get(id: string, principal: Principal): Promise<T>;
  },
): McpResource {
  const uriOf = (id: string) => `${SCHEME}${kind}/${encodeURIComponent(id)}`;
  return {
    uriTemplate: `${SCHEME}${kind}/{id}`,
    name: kind,
    title: spec.title,
    description: spec.description,
    permission: spec.permission,
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
 * Runs, plans, tasks and artifacts as MCP resources. Each reads through its domain
 * service as the HTTP API does, with the same access: runs, plans and tasks are visible to
 * every key, artifacts to their owner, whom they are shared with (or their groups) and admins.
 */
export function buildResources({ coordination, tasks, artifacts }: ToolServices): McpResource[] {
  return [
    jsonResource('runs', {
      title: 'Runs',
      permission: 'runs:read',
      description: 'A run of a plan with its steps (status, input, output, error of each)',
      recent: async () => (await coordination.runs.listRuns({}, { limit: RECENT_RESOURCES, offset: 0 })).items,
      entry: (run) => ({ id: run.id, name: `${run.id} (${run.status})` }),
      get: (id) => coordination.runs.getRun(id),
    }),
    jsonResource('plans', {
      title: 'Plans',
      permission: 'plans:read',
      description: 'A plan (its current version) with its steps',
      recent: () => newest((window) => coordination.plans.listPlans(window), RECENT_RESOURCES),
      entry: (plan) => ({ id: plan.id, name: plan.alias }),
      get: (id) => coordination.plans.getPlan(id),
    }),
    jsonResource('tasks', {
      title: 'Tasks',
      permission: 'tasks:read',
      description: 'A task with its status, assignee and dependencies',
      recent: () => newest((window) => tasks.listTasks({}, window), RECENT_RESOURCES),
      entry: (task) => ({ id: task.id, name: task.title }),
      get: (id) => tasks.getTask(id),
    }),
    {
      uriTemplate: `${SCHEME}artifacts/{id}`,
      name: 'artifacts',
      title: 'Artifacts',
      permission: 'artifacts:read',
      description: `The content of an artifact's current version: text for text and JSON, base64 otherwise; at most ${MAX_RESOURCE_BYTES} bytes`,
      async list(principal) {
        const recent = await newest((window) => artifacts.list(principal, {}, window), RECENT_RESOURCES);
        return recent.map((artifact) => ({
          uri: artifactUri(artifact.id),
          name: artifact.name,
          mimeType: artifact.content_type,
          size: artifact.size_bytes,
        }));
      },
      async read(uri, principal) {
        const content = await readArtifact(artifacts, principal, idIn(uri, 'artifacts'), MAX_RESOURCE_BYTES);
        const mimeType = content.content_type;
        return [
          isTextual(mimeType)
            ? { uri, mimeType, text: content.bytes.toString('utf8') }
            : { uri, mimeType, blob: content.bytes.toString('base64') },
        ];
      },
    },
  ];
}
