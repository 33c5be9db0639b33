import type { Platform } from '../platform.js';
import type { EventLog, Inbox } from '../kernel/ports.js';
import { tasksRoutes } from './routes.js';
import { TasksService } from './service.js';
import { TasksStore } from './store.js';

export { TASK_UNBLOCKED, TasksService } from './service.js';
export type { UnblockedPayload } from './service.js';
export * as taskSchemas from './schemas.js';
export { cycleThrough, findPath } from './graph.js';

/**
 * Projects and tasks. `inbox` (messaging) receives the `task.unblocked` messages;
 * without it the domain works the same and sends none.
 */
export function createTasksDomain(deps: { platform: Platform; events: EventLog; inbox?: Inbox }) {
  const { platform } = deps;
  const service = new TasksService({
    store: new TasksStore(platform.database.db, platform.database.caps),
    clock: platform.clock,
    inbox: deps.inbox,
    events: deps.events,
    audit: platform.audit,
  });
  return { service, routes: tasksRoutes(service) };
}
