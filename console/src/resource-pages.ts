/*
 * Where the console shows a resource the API names by type and id (an audit entry's resource,
 * an event's subject): pure, unit-tested in test/console/audit-search.test.ts.
 */
import type { Permission } from './permission.js';

/** A console page, as a router link takes it, and the permission its view needs beyond reading. */
export type ResourcePage = (
  | { to: '/runs/$runId'; params: { runId: string } }
  | { to: '/plans/$planId'; params: { planId: string } }
  | { to: '/agents/$agentId'; params: { agentId: string } }
  | { to: '/tasks/$taskId'; params: { taskId: string } }
  | { to: '/tasks/projects/$projectId'; params: { projectId: string } }
  | { to: '/routines/$routineId'; params: { routineId: string } }
  | { to: '/artifacts/$artifactId'; params: { artifactId: string } }
  | { to: '/settings/webhooks/$webhookId'; params: { webhookId: string } }
  // Keys, users and triggers have no page of their own: their list.
  | { to: '/settings/keys'; params?: undefined }
  | { to: '/settings/users'; params?: undefined }
  | { to: '/triggers'; params?: undefined }
) & { needs?: Permission };

/** The text before the first `/` of a compound id (`run_…/step`, `group/agent`), and after it. */
function split(id: string): [string, string] {
  const slash = id.indexOf('/');
  return slash < 0 ? [id, ''] : [id.slice(0, slash), id.slice(slash + 1)];
}

/**
 * The page of a resource, or null where the console has none (sessions, capabilities, signing
 * keys, messages, the path of a denied request). A step is shown on its run's page, an access
 * group's member on the agent's.
 */
export function resourcePage({ type, id }: { type: string; id: string }): ResourcePage | null {
  switch (type) {
    case 'run':
      return { to: '/runs/$runId', params: { runId: id } };
    case 'step':
      return { to: '/runs/$runId', params: { runId: split(id)[0] } };
    case 'plan':
      return { to: '/plans/$planId', params: { planId: id } };
    case 'agent':
      return { to: '/agents/$agentId', params: { agentId: id } };
    case 'group_member': {
      const agentId = split(id)[1];
      return agentId === '' ? null : { to: '/agents/$agentId', params: { agentId } };
    }
    case 'task':
      return { to: '/tasks/$taskId', params: { taskId: id } };
    case 'project':
      return { to: '/tasks/projects/$projectId', params: { projectId: id } };
    case 'routine':
      return { to: '/routines/$routineId', params: { routineId: id } };
    case 'artifact':
      return { to: '/artifacts/$artifactId', params: { artifactId: id } };
    case 'webhook':
      return { to: '/settings/webhooks/$webhookId', params: { webhookId: id }, needs: 'webhooks:admin' };
    case 'key':
      return { to: '/settings/keys', needs: 'keys:admin' };
    case 'user':
      return { to: '/settings/users', needs: 'users:admin' };
    case 'trigger':
      return { to: '/triggers' };
    default:
      return null;
  }
}
