import type { Platform } from '../platform.js';
import type { AgentDirectory, Inbox } from '../kernel/ports.js';
import { a2aRoutes } from './routes.js';
import { A2aService, type AgentCapabilities, type AgentSkillSource } from './service.js';
import type { Clock } from '../kernel/clock.js';
import type { Page, Paged } from '../kernel/pagination.js';
import { A2aStore } from './store.js';

export { A2aService } from './service.js';

/** A2A over agent inboxes: cards, JSON-RPC, SSE; tasks follow their messages; the server's endpoint routes through discovery. */
/** What A2A reads of discovery: registrations (the cards) and its picks (the server's endpoint). */
export type A2aDiscovery = AgentDirectory & {
  listCapabilities(query: { agent_id?: string }, window: Page): Promise<Paged<AgentSkillSource>>;
};

/** A page of registrations read at a time. */
const PAGE = 500;
/**
 * How long the server card's skill list is reused: the card is public, and building it reads
 * every registration, so anonymous callers must not be able to make the server do that per request.
 */
const OFFERED_TTL_MS = 30_000;

/** Discovery's registrations as cards need them: one agent's (at most 100), and every capability's name, first description first. */
function capabilitiesOn(discovery: A2aDiscovery, clock: Clock): AgentCapabilities {
  let latest: { at: number; limit: number; offered: Promise<{ capability: string; description: string | null }[]> } | null = null;
  async function readOffered(limit: number) {
    const offered = new Map<string, string | null>();
    for (let offset = 0; offered.size < limit; offset += PAGE) {
      const page = await discovery.listCapabilities({}, { limit: PAGE, offset });
      for (const { capability, metadata } of page.items) {
        const description = typeof metadata.description === 'string' ? metadata.description : null;
        const known = offered.has(capability);
        if (known ? offered.get(capability) === null : offered.size < limit) offered.set(capability, description);
      }
      if (offset + PAGE >= page.total) break;
    }
    return [...offered]
      .map(([capability, description]) => ({ capability, description }))
      .sort((a, b) => a.capability.localeCompare(b.capability));
  }
  return {
    capabilitiesOf: async (agentId) => (await discovery.listCapabilities({ agent_id: agentId }, { limit: 100, offset: 0 })).items,
    offered(limit) {
      const now = clock.now();
      if (!latest || latest.limit !== limit || now - latest.at >= OFFERED_TTL_MS) {
        const read = readOffered(limit);
        latest = { at: now, limit, offered: read };
        // A failed read is not reused.
        read.catch(() => {
          if (latest?.offered === read) latest = null;
        });
      }
      return latest.offered;
    },
  };
}

export function createA2aDomain(deps: { platform: Platform; inbox: Inbox; discovery: A2aDiscovery; version: string }) {
  const { platform } = deps;
  const service = new A2aService({
    store: new A2aStore(platform.database.db, platform.database.caps),
    inbox: deps.inbox,
    agents: capabilitiesOn(deps.discovery, platform.clock),
    directory: deps.discovery,
    clock: platform.clock,
    notifier: platform.notifier,
  });
  return {
    service,
    /** Hears of `a2a_task` messages (kernel/ports.ts `OutcomeHandlers`). */
    outcomeHandler: service.outcomeHandler,
    routes: a2aRoutes(service, {
      baseUrl: platform.publicUrl,
      version: deps.version,
      shutdown: platform.shutdown,
      logger: platform.logger,
      connections: platform.connections,
      stalledClientMs: platform.config.stalledClientMs,
    }),
  };
}
