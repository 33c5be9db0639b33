import { useQueries, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import { ErrorNotice } from '../errors.js';
import type { LiveEvent } from '../event-hub.js';
import { relativeTime } from '../format.js';
import { useEventFeed, useLiveRefresh } from '../live.js';
import { ResourceLink } from '../resource-link.js';
import { useSession } from '../session.js';
import { RUN_STATUSES } from '../runs/status.js';
import { queryKeys } from '../query-keys.js';
import { ALERT_EVENTS } from '../alerts/alerts.js';
import { agentPaused, PausedBadge, usePauses } from '../usage/pauses.js';
import './overview.css';

const HEALTHS = ['healthy', 'degraded', 'unhealthy'] as const;
const DAY_MS = 86_400_000;
// As the Agents view: the lookup has no offset, so the overview counts up to its maximum.
const LOOKUP_LIMIT = 500;
const FAILING_SHOWN = 10;
// The inboxes list pages by agent id: the overview sums its first page and names the deepest.
const INBOXES_COUNTED = 100;
const DEEPEST_SHOWN = 5;
const FEED_SHOWN = 25;
const FIRING_SHOWN = 10;

/** The state of the whole system at a glance, live: agents, messaging, runs, routines, events. */
export function OverviewView() {
  const { can } = useSession();
  return (
    <section>
      <h1>Overview</h1>
      <div className="overview">
        {can('events:read') && <FiringAlerts />}
        <AgentHealth />
        <Messaging />
        <RecentRuns />
        <FailingRoutines />
        <EventFeed />
      </div>
    </section>
  );
}

function Panel({ title, link, children }: { title: string; link?: ReactNode; children: ReactNode }) {
  return (
    <section className="card overview-panel" aria-label={title}>
      <header>
        <h2>{title}</h2>
        {link}
      </header>
      {children}
    </section>
  );
}

/** Figures with their labels; `—` until loaded. */
function Figures({ figures, loading }: { figures: { label: string; value: number | undefined; tone?: string }[]; loading: boolean }) {
  return (
    <dl className="figures">
      {figures.map(({ label, value, tone }) => (
        <div key={label} className={tone} data-figure={label}>
          <dt>{label}</dt>
          <dd>{loading || value === undefined ? '—' : value}</dd>
        </div>
      ))}
    </dl>
  );
}

function AgentHealth() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.agents.all, events: ['agent.>'] });
  const agents = useQuery({
    queryKey: queryKeys.agents.overview(),
    queryFn: () => client.discovery.findAgents({ query: { include_unhealthy: true, limit: LOOKUP_LIMIT } }),
  });
  const list = agents.data?.agents ?? [];
  return (
    <Panel title="Agents" link={<Link to="/agents">All agents</Link>}>
      <ErrorNotice error={agents.error} />
      <Figures
        loading={agents.isPending}
        figures={HEALTHS.map((health) => ({
          label: health,
          value: list.filter((a) => a.health === health).length,
          tone: `health-${health}`,
        }))}
      />
      {agents.isSuccess && list.length === 0 && <p className="muted">No agents yet: one appears once it registers a capability.</p>}
    </Panel>
  );
}

function Messaging() {
  const { client } = useSession();
  // No event marks a plain send or receive: depth follows what does (dead letters, redrives, and the
  // runs and routines that send their agents messages), and every visit.
  useLiveRefresh({ queryKey: queryKeys.inboxes.all, events: ['message.>', 'run.>', 'routine.>'] });
  const inboxes = useQuery({
    queryKey: queryKeys.inboxes.overview(),
    queryFn: () => client.messaging.listInboxes.page({ query: { limit: INBOXES_COUNTED } }),
  });
  const items = inboxes.data?.items ?? [];
  const sum = (pick: (inbox: (typeof items)[number]) => number) => items.reduce((total, inbox) => total + pick(inbox), 0);
  const deepest = [...items]
    .sort((a, b) => b.pending - a.pending)
    .filter((inbox) => inbox.pending > 0)
    .slice(0, DEEPEST_SHOWN);
  const dead = sum((inbox) => inbox.dead_letters);
  // A paused agent's inbox holds its messages: the badge says why it grows.
  const pauses = usePauses();
  return (
    <Panel title="Inboxes" link={<Link to="/agents">Agents</Link>}>
      <ErrorNotice error={inboxes.error} />
      <Figures
        loading={inboxes.isPending}
        figures={[
          { label: 'pending', value: sum((inbox) => inbox.pending) },
          { label: 'leased', value: sum((inbox) => inbox.leased) },
          { label: 'dead letters', value: dead, tone: dead > 0 ? 'health-unhealthy' : undefined },
        ]}
      />
      {(inboxes.data?.total ?? 0) > INBOXES_COUNTED && <p className="muted">Counted over the first {INBOXES_COUNTED} inboxes.</p>}
      {deepest.length > 0 && (
        <ul className="failing" aria-label="Deepest inboxes">
          {deepest.map((inbox) => (
            <li key={inbox.agent_id}>
              <code>{inbox.agent_id}</code> <PausedBadge paused={agentPaused(pauses, inbox.agent_id)} /> {inbox.pending} pending
              {inbox.oldest_pending_at && (
                <span className="muted">, oldest {relativeTime(inbox.oldest_pending_at, inboxes.dataUpdatedAt)}</span>
              )}
            </li>
          ))}
        </ul>
      )}
      {dead > 0 && <p className="muted">Redrive dead letters from the agent's inbox under Agents.</p>}
    </Panel>
  );
}

function RecentRuns() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.runs.all, events: ['run.>'] });
  const counts = useQueries({
    queries: RUN_STATUSES.map((status) => ({
      queryKey: queryKeys.runs.lastDay(status),
      // The window ends now whenever the count is asked again (an event, a visit).
      queryFn: () =>
        client.coordination.listRuns.page({ query: { status, started_after: new Date(Date.now() - DAY_MS).toISOString(), limit: 1 } }),
    })),
  });
  return (
    <Panel title="Runs in the last 24 h" link={<Link to="/runs">All runs</Link>}>
      <ErrorNotice error={counts.find((count) => count.error)?.error} />
      <Figures
        loading={counts.some((count) => count.isPending)}
        figures={RUN_STATUSES.map((status, index) => ({ label: status, value: counts[index]?.data?.total, tone: `status-${status}` }))}
      />
    </Panel>
  );
}

function FailingRoutines() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.routines.all, events: ['routine.>'] });
  const failing = useQuery({
    queryKey: queryKeys.routines.failing(),
    queryFn: () => client.routines.list.page({ query: { last_status: 'failed', limit: FAILING_SHOWN } }),
  });
  const total = failing.data?.total ?? 0;
  return (
    <Panel title="Failing routines" link={<Link to="/routines">All routines</Link>}>
      <ErrorNotice error={failing.error} />
      {failing.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 ? (
        <p className="muted">None: every routine's latest execution succeeded or is under way.</p>
      ) : (
        <>
          <ul className="failing">
            {failing.data?.items.map((routine) => (
              <li key={routine.id}>
                <Link to="/routines/$routineId" params={{ routineId: routine.id }}>
                  {routine.name}
                </Link>{' '}
                <span className="muted">→ {routine.target_agent}</span>
              </li>
            ))}
          </ul>
          {total > FAILING_SHOWN && <p className="muted">and {total - FAILING_SHOWN} more.</p>}
        </>
      )}
    </Panel>
  );
}

function FiringAlerts() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.alerts.all, events: ALERT_EVENTS });
  const firing = useQuery({
    queryKey: queryKeys.alerts.firing(),
    queryFn: () => client.alerts.list.page({ query: { state: 'firing', limit: FIRING_SHOWN } }),
  });
  const total = firing.data?.total ?? 0;
  return (
    <Panel title="Firing alerts" link={<Link to="/alerts">All alerts</Link>}>
      <ErrorNotice error={firing.error} />
      {firing.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 ? (
        <p className="muted">None: no alert rule's condition holds.</p>
      ) : (
        <>
          <ul className="failing" aria-label="Firing alerts">
            {firing.data?.items.map((alert) => (
              <li key={alert.id} data-alert={alert.id}>
                <span className={`badge severity-${alert.severity}`}>{alert.severity}</span> <strong>{alert.rule_name}</strong>{' '}
                <span className="muted">
                  value {alert.value}
                  {alert.detail ? ` (${alert.detail})` : ''}, since {relativeTime(alert.since, firing.dataUpdatedAt)}
                  {alert.acknowledged_by ? `, acknowledged by ${alert.acknowledged_by}` : ''}
                </span>
              </li>
            ))}
          </ul>
          {total > FIRING_SHOWN && <p className="muted">and {total - FIRING_SHOWN} more.</p>}
        </>
      )}
    </Panel>
  );
}

function EventFeed() {
  const events = useEventFeed(FEED_SHOWN);
  return (
    <Panel title="Live events">
      {events.length === 0 ? (
        <p className="muted">Nothing has happened since you opened the console. Events appear here as they happen.</p>
      ) : (
        <ol className="feed" aria-live="polite">
          {events.map((event) => (
            <li key={event.id} data-event={event.type}>
              <time dateTime={event.created_at} title={event.created_at}>
                {new Date(event.created_at).toLocaleTimeString()}
              </time>
              <code>{event.type}</code>
              <Subject event={event} />
              <span className="muted">by {event.actor}</span>
            </li>
          ))}
        </ol>
      )}
    </Panel>
  );
}

/** The event's subject, linked to its view where the console has one: an approval's or an input's subject is its run. */
function Subject({ event }: { event: LiveEvent }) {
  const kind = event.type.split('.')[0]!;
  return (
    <ResourceLink resource={{ type: kind === 'approval' || kind === 'input' ? 'run' : kind, id: event.subject }}>
      <span>{event.subject}</span>
    </ResourceLink>
  );
}
