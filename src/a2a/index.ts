import type { Platform } from '../kernel/platform.js';
import type { Inbox } from '../kernel/ports.js';
import { a2aRoutes } from './routes.js';
import { A2aService, type AgentCapabilities } from './service.js';
import { A2aStore } from './store.js';

export { A2aService } from './service.js';

/** A2A over agent inboxes (issue 26): cards, JSON-RPC, SSE; tasks follow their messages. */
export function createA2aDomain(deps: { platform: Platform; inbox: Inbox; agents: AgentCapabilities; version: string }) {
  const { platform } = deps;
  const service = new A2aService({
    store: new A2aStore(platform.database.db, platform.database.caps),
    inbox: deps.inbox,
    agents: deps.agents,
    clock: platform.clock,
    notifier: platform.notifier,
  });
  return {
    service,
    /** Hears of `a2a_task` messages (kernel/ports.ts `OutcomeHandlers`). */
    outcomeHandler: service.outcomeHandler,
    routes: a2aRoutes(service, { baseUrl: platform.publicUrl, version: deps.version, shutdown: platform.shutdown, logger: platform.logger, connections: platform.connections, stalledClientMs: platform.config.stalledClientMs }),
  };
}
