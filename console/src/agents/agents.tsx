import { keepPreviousData, useQueries, useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState, type ReactNode } from 'react';
import { ErrorNotice } from '../errors.js';
import { filterText, FilterForm, TextFilter } from '../filter-fields.js';
import { formatLoad, pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';
import { agentPaused, BUDGET_EVENTS, PausedBadge, PausedByBudget, usePauses } from '../usage/pauses.js';

export interface AgentsSearch {
  page?: number;
  /** A capability name or pattern (`text.*`). */
  capability?: string;
  group?: string;
}

const PAGE_SIZE = 25;
/** Agents coming and going, and budgets pausing or resuming them (the lookup's `paused`). */
const AGENT_EVENTS = ['agent.>', ...BUDGET_EVENTS];

/** Every agent with its health, load, last heartbeat, capabilities and groups. */
export function AgentsView({ search }: { search: AgentsSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/agents' });
  const filters = { capability: search.capability, group: search.group };
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.agents.all, events: AGENT_EVENTS });
  // One page of the lookup in its default order (first_available: healthy, then busy, then silent).
  const agents = useQuery({
    queryKey: queryKeys.agents.list({ ...filters, offset }),
    queryFn: () =>
      client.discovery.findAgents.page({ query: { include_unhealthy: true, include_paused: true, limit: PAGE_SIZE, offset, ...filters } }),
    placeholderData: keepPreviousData,
  });
  const total = agents.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  const shown = agents.data?.items ?? [];
  // The lookup says which agents a budget paused, or the capability it names them for; the
  // pauses say which (every reader's).
  const pauses = usePauses();
  // Each agent's capabilities (the lookup names one per agent), for the agents on this page.
  const capabilities = useQueries({
    queries: shown.map((agent) => ({
      queryKey: queryKeys.agents.rowCapabilities(agent.agent_id),
      queryFn: () => client.discovery.listCapabilities({ query: { agent_id: agent.agent_id, limit: 100 } }),
    })),
  });

  return (
    <section>
      <h1>Agents</h1>
      <AgentFilters
        key={JSON.stringify(filters)}
        search={search}
        onApply={(next) => void navigate({ search: { ...next, page: undefined } })}
      />
      <ErrorNotice error={agents.error} />
      {agents.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !agents.isError ? (
        <EmptyAgents filtered={filters.capability !== undefined || filters.group !== undefined} />
      ) : (
        <>
          <Table columns={['Agent', 'Health', 'Load', 'Last heartbeat', 'Capabilities', 'Groups']}>
            {shown.map((agent, index) => {
              const own = capabilities[index]?.data;
              const names = own ? own.map((c) => c.capability) : [agent.capability];
              const groups = own ? [...new Set(own.flatMap((c) => c.groups))] : agent.groups;
              return (
                <tr key={agent.agent_id} data-agent={agent.agent_id}>
                  <th scope="row">
                    <Link to="/agents/$agentId" params={{ agentId: agent.agent_id }}>
                      <code>{agent.agent_id}</code>
                    </Link>{' '}
                    <PausedBadge
                      paused={agent.paused && (agentPaused(pauses, agent.agent_id) || !pauses.capability.has(agent.capability))}
                    />
                  </th>
                  <td>
                    <span className={`badge health-${agent.health}`}>{agent.health}</span>
                  </td>
                  <td>{formatLoad(agent.load)}</td>
                  <td>
                    <time dateTime={agent.last_heartbeat ?? undefined} title={agent.last_heartbeat ?? undefined}>
                      {relativeTime(agent.last_heartbeat, agents.dataUpdatedAt)}
                    </time>
                  </td>
                  <td>
                    <Chips
                      items={names}
                      flag={(name) => <PausedByBudget pause={pauses.capability.get(name)} what="capability" compact />}
                    />
                  </td>
                  <td>
                    <Chips items={groups} />
                  </td>
                </tr>
              );
            })}
          </Table>
          <Pager span={span} total={total} noun="agents" onPage={(page) => void navigate({ search: { ...search, page } })} />
        </>
      )}
    </section>
  );
}

/** `flag`: what to show beside an item (a budget's pause of a capability). */
export function Chips({ items, flag }: { items: string[]; flag?: (item: string) => ReactNode }) {
  if (items.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="chips">
      {items.map((item) => (
        <li key={item}>
          {item}
          {flag?.(item)}
        </li>
      ))}
    </ul>
  );
}

/** The agents' filters, applied into the URL. */
function AgentFilters({ search, onApply }: { search: AgentsSearch; onApply(filters: AgentsSearch): void }) {
  const [capability, setCapability] = useState(search.capability ?? '');
  const [group, setGroup] = useState(search.group ?? '');
  return (
    <FilterForm label="Filter agents" onApply={() => onApply({ capability: filterText(capability), group: filterText(group) })}>
      <TextFilter label="Capability" value={capability} onChange={setCapability} placeholder="text.*" />
      <TextFilter label="Group" value={group} onChange={setGroup} />
    </FilterForm>
  );
}

function EmptyAgents({ filtered }: { filtered: boolean }) {
  if (filtered) {
    return (
      <div className="notice empty">
        <p>No agent matches these filters.</p>
        <Link to="/agents">Show every agent</Link>
      </div>
    );
  }
  return (
    <div className="notice empty">
      <p>
        <strong>No agents yet.</strong> An agent appears here once it registers a capability.
      </p>
      <ol>
        <li>
          Create a key for it under <Link to="/settings/keys">Settings → API keys</Link> (role <em>agent</em>).
        </li>
        <li>
          Start it with the SDK's <code>createAgent()</code>, or call <code>POST /api/v1/discovery/capabilities</code> and then{' '}
          <code>POST /api/v1/discovery/heartbeat</code> with that key.
        </li>
      </ol>
    </div>
  );
}
