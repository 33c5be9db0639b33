import { useQueries, useQuery } from '@tanstack/react-query';
import { Link } from '@tanstack/react-router';
import type { ReactNode } from 'react';
import type { Query } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import type { LiveEvent } from '../event-hub.js';
import { useEventFeed, useLiveRefresh } from '../live.js';
import { useSession } from '../session.js';
import './overview.css';

const HEALTHS = ['healthy', 'degraded', 'unhealthy'] as const;
const RUN_STATUSES = ['running', 'waiting', 'completed', 'failed', 'cancelled'] as const satisfies readonly NonNullable<Query<'coordination.listRuns'>['status']>[];
const DAY_MS = 86_400_000;
// As the Agents view: the lookup has no offset, so the overview counts up to its maximum.
const LOOKUP_LIMIT = 500;
const FAILING_SHOWN = 10;
const FEED_SHOWN = 25;

/** The state of the whole system at a glance, live: agents, messaging, runs, routines, events. */
export function OverviewView() {
  return (
    <section>
      <h1>Overview</h1>
      <div className="overview">
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
  useLiveRefresh({ queryKey: ['agents'], events: ['agent.>'] });
  const agents = useQuery({
    queryKey: ['agents', 'lookup', {}],
    queryFn: () => client.discovery.findAgents({ query: { include_unhealthy: true, limit: LOOKUP_LIMIT } }),
  });
  const list = agents.data?.agents ?? [];
  return (
    <Panel title="Agents" link={<Link to="/agents">All agents</Link>}>
      <ErrorNotice error={agents.error} />
      <Figures loading={agents.isPending} figures={HEALTHS.map((health) => ({ label: health, value: list.filter((a) => a.health === health).length, tone: `health-${health}` }))} />
      {agents.isSuccess && list.length === 0 && <p className="muted">No agents yet: one appears once it registers a capability.</p>}
    </Panel>
  );
}

function Messaging() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: ['dead-letters'], events: ['message.>'] });
  const deadLetters = useQuery({
    queryKey: ['dead-letters', 'total'],
    queryFn: () => client.messaging.listDeadLetters.page({ query: { limit: 1 } }),
  });
  return (
    <Panel title="Messaging">
      <ErrorNotice error={deadLetters.error} />
      <Figures loading={deadLetters.isPending} figures={[{ label: 'dead letters', value: deadLetters.data?.total, tone: deadLetters.data?.total ? 'health-unhealthy' : undefined }]} />
      {deadLetters.data?.total ? <p className="muted">Redrive them from an agent's inbox under Agents.</p> : null}
    </Panel>
  );
}

function RecentRuns() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: ['runs'], events: ['run.>'] });
  const counts = useQueries({
    queries: RUN_STATUSES.map((status) => ({
      queryKey: ['runs', 'last-24h', status],
      // The window ends now whenever the count is asked again (an event, a visit).
      queryFn: () => client.coordination.listRuns.page({ query: { status, started_after: new Date(Date.now() - DAY_MS).toISOString(), limit: 1 } }),
    })),
  });
  return (
    <Panel title="Runs in the last 24 h" link={<Link to="/runs">All runs</Link>}>
      <ErrorNotice error={counts.find((count) => count.error)?.error} />
      <Figures
        loading={counts.some((count) => count.isPending)}
        figures={RUN_STATUSES.map((status, index) => ({ label: status, value: counts[index]?.data?.total, tone: `run-${status}` }))}
      />
    </Panel>
  );
}

function FailingRoutines() {
  const { client } = useSession();
  useLiveRefresh({ queryKey: ['routines'], events: ['routine.>'] });
  const failing = useQuery({
    queryKey: ['routines', 'failing'],
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

/** The event's subject, linked to its view where the console has one. */
function Subject({ event }: { event: LiveEvent }) {
  const kind = event.type.split('.')[0];
  if (kind === 'routine') {
    return (
      <Link to="/routines/$routineId" params={{ routineId: event.subject }}>
        {event.subject}
      </Link>
    );
  }
  if (kind === 'agent') return <Link to="/agents">{event.subject}</Link>;
  if (kind === 'key') return <Link to="/settings/keys">{event.subject}</Link>;
  return <span>{event.subject}</span>;
}
