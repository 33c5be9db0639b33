import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { Fact } from '../facts.js';
import { formatLoad, relativeTime, withMember } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { usePageParam } from '../page-param.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { Chips } from './agents.js';
import { queryKeys } from '../query-keys.js';
import { agentPaused, BUDGET_EVENTS, PausedBadge, PausedByBudget, usePauses } from '../usage/pauses.js';
import './agents.css';

/** Pages of the agent's inbox lists, in the URL. */
export interface AgentSearch {
  pending?: number;
  leased?: number;
  dead?: number;
}

type DeadLetter = Item<'messaging.listDeadLetters'>;
type InboxMessage = Item<'messaging.listInboxMessages'>;

const PAGE_SIZE = 20;
const CAPABILITY_LIMIT = 100;
// Sends, receives and acknowledgements are no events (their volume would drown the log): the
// inbox's pending and leased lists are as fresh as the last refresh, dead letters are live.
// Budget events: its capabilities' `paused`.
const AGENT_EVENTS = ['agent.*', 'message.*', ...BUDGET_EVENTS];
/** A delivery attempt's outcome in the console's tones (the health badges' colours); an open one plain. */
const OUTCOME_BADGE: Record<string, string> = {
  acked: 'health-healthy',
  rejected: 'health-unhealthy',
  dead: 'health-unhealthy',
  expired: 'health-degraded',
};

/** One agent: health, capabilities, groups and its inbox (pending, leased, dead letters to redrive). */
export function AgentDetailView({ agentId }: { agentId: string }) {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.agents.detail(agentId), events: AGENT_EVENTS });
  const capabilities = useQuery({
    queryKey: queryKeys.agents.capabilities(agentId),
    queryFn: () => client.discovery.listCapabilities.page({ query: { agent_id: agentId, limit: CAPABILITY_LIMIT } }),
  });
  // Discovery knows an agent by its capabilities (its health is a 404 without): an id that only
  // receives messages has an inbox and nothing else.
  const registered = (capabilities.data?.total ?? 0) > 0;
  const health = useQuery({
    queryKey: queryKeys.agents.health(agentId),
    queryFn: () => client.discovery.agentHealth({ path: { agent_id: agentId } }),
    enabled: registered,
  });
  const groups = [...new Set(capabilities.data?.items.flatMap((c) => c.groups) ?? [])].sort();
  const pauses = usePauses();

  return (
    <section className="agent-detail">
      <p>
        <Link to="/agents">← Agents</Link>
      </p>
      <h1>
        <code>{agentId}</code> <PausedBadge paused={agentPaused(pauses, agentId)} />
      </h1>
      <ErrorNotice error={health.error} />
      {health.data && registered && (
        <dl className="facts" aria-label="About the agent">
          <Fact label="Health">
            <span className={`badge health-${health.data.status}`}>{health.data.status}</span>
          </Fact>
          <Fact label="Load">{formatLoad(health.data.load)}</Fact>
          <Fact label="Last heartbeat">
            <time dateTime={health.data.last_heartbeat ?? undefined}>{relativeTime(health.data.last_heartbeat, health.dataUpdatedAt)}</time>
          </Fact>
          <Fact label="Groups">
            <Chips items={groups} />
          </Fact>
        </dl>
      )}

      <h2>Capabilities</h2>
      <ErrorNotice error={capabilities.error} />
      {capabilities.data?.total === 0 ? (
        <p className="notice empty">
          Not registered in discovery: no capabilities, so no health either (its inbox still takes messages). The agent registers them with{' '}
          <code>POST /api/v1/discovery/capabilities</code> (or the SDK's <code>createAgent()</code>).
        </p>
      ) : (
        <Table columns={['Capability', 'Description', 'Groups']}>
          {capabilities.data?.items.map((capability) => (
            <tr key={capability.id}>
              <th scope="row">
                <code>{capability.capability}</code> <PausedByBudget pause={capability.paused} what="capability" />
              </th>
              <td>
                {typeof capability.metadata.description === 'string' ? capability.metadata.description : <span className="muted">—</span>}
              </td>
              <td>
                <Chips items={capability.groups} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      {capabilities.data && capabilities.data.total > CAPABILITY_LIMIT && (
        <p className="muted">
          The first {CAPABILITY_LIMIT} of {capabilities.data.total} capabilities.
        </p>
      )}

      <Inbox agentId={agentId} />
    </section>
  );
}

function Inbox({ agentId }: { agentId: string }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const summary = useQuery({
    queryKey: queryKeys.agents.inboxSummary(agentId),
    queryFn: async () => (await client.messaging.listInboxes({ query: { agent_id: agentId } }))[0],
  });
  const counts = summary.data;
  return (
    <>
      <div className="inbox-heading">
        <h2>Inbox</h2>
        <button
          type="button"
          className="secondary"
          onClick={() => void queryClient.invalidateQueries({ queryKey: queryKeys.agents.inbox(agentId) })}
        >
          Refresh inbox
        </button>
      </div>
      <ErrorNotice error={summary.error} />
      {counts && (
        <dl className="facts" aria-label="Inbox counts">
          <Fact label="Pending">{counts.pending}</Fact>
          <Fact label="Leased">{counts.leased}</Fact>
          <Fact label="Dead letters">{counts.dead_letters}</Fact>
          <Fact label="Oldest pending">
            {counts.oldest_pending_at === null ? (
              <span className="muted">—</span>
            ) : (
              <time dateTime={counts.oldest_pending_at}>{relativeTime(counts.oldest_pending_at, summary.dataUpdatedAt)}</time>
            )}
          </Fact>
        </dl>
      )}
      <MessageList agentId={agentId} state="pending" />
      <MessageList agentId={agentId} state="leased" />
      <DeadLetters agentId={agentId} />
    </>
  );
}

const MESSAGE_LISTS = {
  pending: { title: 'Pending', empty: 'Nothing waits in this inbox: messages sent to the agent show here until it receives them.' },
  leased: {
    title: 'Leased',
    empty: 'No message is leased: a message received and not yet acknowledged or rejected shows here until its lease runs out.',
  },
} as const;

function MessageList({ agentId, state }: { agentId: string; state: 'pending' | 'leased' }) {
  const { client } = useSession();
  const paging = usePageParam(state, PAGE_SIZE);
  const messages = useQuery({
    queryKey: queryKeys.agents.inboxMessages(agentId, state, paging.offset),
    queryFn: () =>
      client.messaging.listInboxMessages.page({ path: { agent_id: agentId }, query: { state, limit: PAGE_SIZE, offset: paging.offset } }),
    placeholderData: keepPreviousData,
  });
  const total = messages.data?.total ?? 0;
  const { title, empty } = MESSAGE_LISTS[state];
  return (
    <section className="inbox-list" aria-labelledby={`inbox-${state}`} data-list={state}>
      <h3 id={`inbox-${state}`}>
        {title} <span className="muted">({total})</span>
      </h3>
      <ErrorNotice error={messages.error} />
      {messages.data && total === 0 ? (
        <p className="notice empty">{empty}</p>
      ) : (
        messages.data && (
          <>
            <Table
              columns={[
                'Message',
                'Event',
                'From',
                'Sent',
                state === 'leased' ? 'Lease expires' : 'Visible',
                'Deliveries',
                'Priority',
                ...(state === 'leased' ? ['Leased to'] : []),
              ]}
            >
              {messages.data.items.map((message) => (
                <MessageRow key={message.message_id} message={message} now={messages.dataUpdatedAt} leased={state === 'leased'} />
              ))}
            </Table>
            <Pager
              span={paging.span(total)}
              total={total}
              estimated={messages.data?.totalEstimated}
              noun="messages"
              onPage={paging.onPage}
            />
          </>
        )
      )}
    </section>
  );
}

function MessageRow({ message, now, leased }: { message: InboxMessage; now: number; leased: boolean }) {
  const until = leased ? message.lease_expires_at! : message.visible_at;
  return (
    <tr data-message={message.message_id}>
      <th scope="row">
        <code>{message.message_id}</code>
      </th>
      <td>{message.event_name}</td>
      <td>
        <code>{message.source}</code>
      </td>
      <td>
        <time dateTime={message.timestamp}>{relativeTime(message.timestamp, now)}</time>
      </td>
      <td>
        <time dateTime={until} title={until}>
          {relativeTime(until, now)}
        </time>
      </td>
      <td>
        {message.deliveries} of {message.max_deliveries}
      </td>
      <td data-flow>
        {message.priority}
        {message.ordering_key !== null && (
          <>
            {' · order '}
            <code>{message.ordering_key}</code>
          </>
        )}
        {message.fairness_key !== null && (
          <>
            {' · fair '}
            <code>{message.fairness_key}</code>
          </>
        )}
        {message.blocked_by === 'ordering_key' && (
          <>
            {' '}
            <span className="badge" title="A message of its ordering key sent before it, or leased now, is not settled yet">
              held by its ordering key
            </span>
          </>
        )}
      </td>
      {leased && (
        <td>
          <code>{message.leased_to}</code>
        </td>
      )}
    </tr>
  );
}

function DeadLetters({ agentId }: { agentId: string }) {
  const { client, can } = useSession();
  // Redriving needs messaging:write: without it the letters are only shown.
  const mayRedrive = can('messaging:write');
  const queryClient = useQueryClient();
  const paging = usePageParam('dead', PAGE_SIZE);
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const letters = useQuery({
    queryKey: queryKeys.agents.inboxMessages(agentId, 'dead', paging.offset),
    queryFn: () => client.messaging.listDeadLetters.page({ query: { agent_id: agentId, limit: PAGE_SIZE, offset: paging.offset } }),
    placeholderData: keepPreviousData,
  });
  // One request per letter (the API redrives one at a time); every one is tried, and the
  // failures are shown with what went wrong.
  const redrive = useMutation({
    mutationFn: async (ids: string[]) => {
      const results = await Promise.allSettled(ids.map((id) => client.messaging.redriveDeadLetter({ path: { message_id: id } })));
      const failed = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
      return { redriven: ids.length - failed.length, failed };
    },
    onSuccess: () => setSelected(new Set()),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: queryKeys.agents.inbox(agentId) }),
  });
  const items = letters.data?.items ?? [];
  const total = letters.data?.total ?? 0;
  const allSelected = items.length > 0 && items.every((letter) => selected.has(letter.message_id));
  const toggle = (id: string, on: boolean) => setSelected((current) => withMember(current, id, on));

  return (
    <section className="inbox-list" aria-labelledby="inbox-dead" data-list="dead">
      <h3 id="inbox-dead">
        Dead letters <span className="muted">({total})</span>
      </h3>
      <ErrorNotice error={letters.error} />
      {redrive.data && (
        <div role="status" className={`notice ${redrive.data.failed.length > 0 ? 'error' : 'success'}`}>
          <p>
            Redriven: {redrive.data.redriven}
            {redrive.data.failed.length > 0 && `, failed: ${redrive.data.failed.length}`}.
          </p>
          {redrive.data.failed.slice(0, 1).map((error, index) => (
            <ErrorNotice key={index} error={error} />
          ))}
        </div>
      )}
      {letters.data && total === 0 ? (
        <p className="notice empty">No dead letters. A message lands here when it is rejected without a retry or runs out of deliveries.</p>
      ) : (
        letters.data && (
          <>
            {mayRedrive && (
              <div className="bulk-actions">
                <label className="toggle">
                  <input
                    type="checkbox"
                    checked={allSelected}
                    onChange={(event) => setSelected(event.target.checked ? new Set(items.map((letter) => letter.message_id)) : new Set())}
                  />
                  Select all on this page
                </label>
                <button type="button" disabled={selected.size === 0 || redrive.isPending} onClick={() => redrive.mutate([...selected])}>
                  Redrive selected ({selected.size})
                </button>
              </div>
            )}
            <Table
              columns={
                mayRedrive
                  ? [
                      { label: 'Select', visuallyHidden: true },
                      'Message',
                      'Event',
                      'Reason',
                      'Dead since',
                      'Attempts',
                      { label: 'Actions', visuallyHidden: true },
                    ]
                  : ['Message', 'Event', 'Reason', 'Dead since', 'Attempts']
              }
            >
              {items.map((letter) => (
                <DeadLetterRow
                  key={letter.message_id}
                  letter={letter}
                  now={letters.dataUpdatedAt}
                  selected={selected.has(letter.message_id)}
                  onSelect={(on) => toggle(letter.message_id, on)}
                  onRedrive={mayRedrive ? () => redrive.mutate([letter.message_id]) : null}
                  busy={redrive.isPending}
                />
              ))}
            </Table>
            <Pager
              span={paging.span(total)}
              total={total}
              estimated={letters.data?.totalEstimated}
              noun="dead letters"
              onPage={paging.onPage}
            />
          </>
        )
      )}
    </section>
  );
}

interface DeadLetterRowProps {
  letter: DeadLetter;
  now: number;
  selected: boolean;
  busy: boolean;
  onSelect(selected: boolean): void;
  /** Null when the principal may not redrive: no checkbox, no button. */
  onRedrive: (() => void) | null;
}

function DeadLetterRow({ letter, now, selected, busy, onSelect, onRedrive }: DeadLetterRowProps) {
  return (
    <tr data-message={letter.message_id}>
      {onRedrive && (
        <td>
          <input
            type="checkbox"
            aria-label={`Select ${letter.message_id}`}
            checked={selected}
            onChange={(event) => onSelect(event.target.checked)}
          />
        </td>
      )}
      <th scope="row">
        <code>{letter.message_id}</code>
      </th>
      <td>{letter.event_name}</td>
      <td>{letter.reason ?? <span className="muted">—</span>}</td>
      <td>
        <time dateTime={letter.dead_at ?? undefined}>{relativeTime(letter.dead_at, now)}</time>
      </td>
      <td>
        <ol className="attempts" aria-label={`Attempts of ${letter.message_id}`}>
          {letter.attempts.map((attempt) => (
            <li key={attempt.attempt}>
              <span className={`badge ${OUTCOME_BADGE[attempt.outcome ?? ''] ?? ''}`}>{attempt.outcome ?? 'open'}</span>{' '}
              <code>{attempt.receiver}</code>{' '}
              <time dateTime={attempt.delivered_at} title={`delivered ${attempt.delivered_at}, ended ${attempt.ended_at ?? 'not yet'}`}>
                {relativeTime(attempt.delivered_at, now)}
              </time>
              {attempt.reason && <span className="attempt-reason">{attempt.reason}</span>}
            </li>
          ))}
        </ol>
      </td>
      {onRedrive && (
        <td className="actions">
          <button type="button" className="secondary" disabled={busy} onClick={onRedrive} aria-label={`Redrive ${letter.message_id}`}>
            Redrive
          </button>
        </td>
      )}
    </tr>
  );
}
