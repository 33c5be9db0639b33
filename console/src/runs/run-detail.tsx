import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useId, useMemo, useState, type FormEvent } from 'react';
import { ErrorNotice } from '../errors.js';
import { elapsed, formatDuration, pageWindow, relativeTime } from '../format.js';
import { JsonView } from '../json-view.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { PlanGraph } from '../plans/plan-graph.js';
import { useSession } from '../session.js';
import type { StepStatus } from './run-status.js';
import { StatusBadge } from './status.js';
import { Table } from '../table.js';
import { RUN_EVENTS, type Run } from './runs.js';
import { queryKeys } from '../query-keys.js';
import type { PlanStep } from '../plans/plan-layout.js';
import { agentPaused, PausedBadge, PausedByBudget, usePauses, type Pauses } from '../usage/pauses.js';
import { CostLine, StepCheckpoint, StepLogs } from './step-work.js';
import { RerunFromStep, rerunnable } from './rerun-step.js';
import './runs.css';

export interface RunSearch {
  /** The page of the run's events. */
  events?: number;
}

const EVENTS_PAGE_SIZE = 50;
type RunStep = Run['steps'][number];

/** One run: what it ran (the plan graph coloured by step status), its steps' timeline with their data, its events, and cancel/redrive. */
export function RunDetailView({ runId, search }: { runId: string; search: RunSearch }) {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.runs.all, events: RUN_EVENTS });
  const run = useQuery({
    queryKey: queryKeys.runs.detail(runId),
    queryFn: () => client.coordination.getRun({ path: { run_id: runId } }),
  });
  if (run.isPending) return <p className="muted">Loading…</p>;
  if (!run.data) {
    return (
      <section>
        <h1>Run {runId}</h1>
        <ErrorNotice error={run.error} />
        <Link to="/runs">All runs</Link>
      </section>
    );
  }
  return <RunDetail run={run.data} now={run.dataUpdatedAt} search={search} />;
}

function RunDetail({ run, now, search }: { run: Run; now: number; search: RunSearch }) {
  const { client } = useSession();
  // The version the run pinned: it may differ from the plan's current one.
  const plan = useQuery({
    queryKey: queryKeys.plans.version(run.plan_id, run.plan_version),
    queryFn: () => client.coordination.getPlanVersion({ path: { plan_id: run.plan_id, version: run.plan_version } }),
    staleTime: Infinity,
  });
  const statuses = useMemo(
    () => Object.fromEntries(run.steps.map((step) => [step.id, step.status])) as Record<string, StepStatus>,
    [run.steps],
  );
  const took = elapsed(run.started_at, run.completed_at, now);
  const alias = plan.data?.alias;

  return (
    <section className="run-detail">
      <p className="breadcrumb">
        <Link to="/runs">Runs</Link> /
      </p>
      <div className="view-heading">
        <h1>
          Run <code>{run.id}</code>
        </h1>
        <StatusBadge status={run.status} />
        {run.blocked_by && <span className="muted">blocked by {run.blocked_by.replace('_', ' ')}</span>}
      </div>
      <dl className="facts">
        <div>
          <dt>Plan</dt>
          <dd>
            <Link to="/plans/$planId" params={{ planId: run.plan_id }} search={{ version: run.plan_version }}>
              {alias ?? <code>{run.plan_id}</code>}
            </Link>{' '}
            <span className="muted">version {run.plan_version}</span>
          </dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>
            <time dateTime={run.started_at} title={run.started_at}>
              {relativeTime(run.started_at, now)}
            </time>{' '}
            by {run.created_by}
          </dd>
        </div>
        <div>
          <dt>{run.completed_at ? 'Took' : 'Running for'}</dt>
          <dd>{took === null ? '—' : formatDuration(took)}</dd>
        </div>
        <div>
          <dt>Cost</dt>
          <dd>
            <CostLine usage={run.usage} />
          </dd>
        </div>
        <div>
          <dt>Current step</dt>
          <dd>{run.current_step ? <code>{run.current_step}</code> : '—'}</dd>
        </div>
        {run.rerun_of && (
          <div>
            <dt>Rerun of</dt>
            <dd>
              <Link to="/runs/$runId" params={{ runId: run.rerun_of }}>
                <code>{run.rerun_of}</code>
              </Link>
            </dd>
          </div>
        )}
        {run.parent_run_id && (
          <div>
            <dt>Parent run</dt>
            <dd>
              <Link to="/runs/$runId" params={{ runId: run.parent_run_id }}>
                <code>{run.parent_run_id}</code>
              </Link>
            </dd>
          </div>
        )}
      </dl>
      {run.error && (
        <div className="notice error">
          <p>
            <strong>Failed:</strong> {run.error}
          </p>
        </div>
      )}
      <RunActions run={run} />

      <h2>Plan</h2>
      <ErrorNotice error={plan.error} />
      {plan.data && <PlanGraph steps={plan.data.steps} statuses={statuses} label={`Steps of run ${run.id} by status`} />}

      <h2>Steps</h2>
      <Timeline run={run} definitions={plan.data?.steps ?? []} now={now} />

      <h2>Input and output</h2>
      <div className="io">
        <div>
          <h3>Input</h3>
          <JsonView value={run.input} label="Run input" />
        </div>
        <div>
          <h3>Output</h3>
          <JsonView value={run.output} label="Run output" />
        </div>
      </div>

      <h2>Events</h2>
      <RunEvents runId={run.id} search={search} />
    </section>
  );
}

/** Cancel a running or waiting run, redrive a failed one (runs:write); each with an optional reason for the audit log. */
function RunActions({ run }: { run: Run }) {
  const { can } = useSession();
  if (!can('runs:write')) return null;
  if (run.status === 'running' || run.status === 'waiting') {
    return <ReasonedAction run={run} action="cancel" label="Cancel run" confirm="Confirm cancel" danger />;
  }
  if (run.status === 'failed') return <ReasonedAction run={run} action="redrive" label="Redrive run" confirm="Confirm redrive" />;
  return null;
}

function ReasonedAction({
  run,
  action,
  label,
  confirm,
  danger = false,
}: {
  run: Run;
  action: 'cancel' | 'redrive';
  label: string;
  confirm: string;
  danger?: boolean;
}) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const act = useMutation({
    mutationFn: () => {
      const input = { path: { run_id: run.id }, body: reason.trim() ? { reason: reason.trim() } : {} };
      return action === 'cancel' ? client.coordination.cancelRun(input) : client.coordination.redriveRun(input);
    },
    onSuccess: (updated) => {
      queryClient.setQueryData(queryKeys.runs.detail(run.id), updated);
      void queryClient.invalidateQueries({ queryKey: queryKeys.runs.all });
      setOpen(false);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    act.mutate();
  };
  if (!open) {
    return (
      <div className="run-actions">
        <button type="button" className={danger ? 'danger' : undefined} onClick={() => setOpen(true)}>
          {label}
        </button>
      </div>
    );
  }
  return (
    <form className="card run-actions" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{label}</h2>
      <label>
        Reason (kept in the audit log)
        <input value={reason} onChange={(event) => setReason(event.target.value)} maxLength={1000} />
      </label>
      <div className="buttons">
        <button type="submit" className={danger ? 'danger' : undefined} disabled={act.isPending}>
          {confirm}
        </button>
        <button type="button" className="secondary" onClick={() => setOpen(false)}>
          Keep it
        </button>
      </div>
      <ErrorNotice error={act.error} />
    </form>
  );
}

/** The steps in plan order: when each ran (a bar on the run's time line), for how long, how many attempts, and their data. */
function Timeline({ run, definitions, now }: { run: Run; definitions: readonly PlanStep[]; now: number }) {
  const start = Date.parse(run.started_at);
  const span = Math.max(1, (run.completed_at ? Date.parse(run.completed_at) : now) - start);
  const pauses = usePauses();
  const { can } = useSession();
  const rerun = can('runs:write') && rerunnable(run) ? run : null;
  return (
    <ol className="timeline">
      {run.steps.map((step) => (
        <TimelineStep
          key={step.id}
          runId={run.id}
          rerun={rerun}
          step={step}
          now={now}
          pauses={pauses}
          planId={run.plan_id}
          capability={definitions.find((definition) => definition.id === step.id)?.capability ?? null}
          place={(at) => Math.min(100, Math.max(0, ((at - start) / span) * 100))}
        />
      ))}
    </ol>
  );
}

function TimelineStep({
  runId,
  rerun,
  step,
  now,
  pauses,
  planId,
  capability,
  place,
}: {
  runId: string;
  /** The run, when it may be rerun from this step. */
  rerun: Run | null;
  step: RunStep;
  now: number;
  pauses: Pauses;
  planId: string;
  /** The capability the step's definition names, if any. */
  capability: string | null;
  place(at: number): number;
}) {
  const took = elapsed(step.started_at, step.completed_at, now);
  const left = step.started_at ? place(Date.parse(step.started_at)) : 0;
  const right = step.started_at ? place(step.completed_at ? Date.parse(step.completed_at) : now) : 0;
  const hasData = step.input !== null || step.output !== null || step.error !== null;
  return (
    <li className="timeline-step" data-step={step.id}>
      <div className="timeline-head">
        <strong>
          <code>{step.id}</code>
        </strong>
        <span className="muted">{step.type}</span>
        <StatusBadge status={step.status} />
        {step.blocked_by === 'no_agent' && <span className="muted">no healthy agent has the capability yet</span>}
        {step.blocked_by === 'budget' && <span className="muted">waits: a budget paused its plan, its capability or its agents</span>}
        {step.blocked_by === 'budget' && <PausedByBudget pause={pauses.plan.get(planId)} what="plan" />}
        {step.blocked_by === 'budget' && capability !== null && (
          <span className="muted">
            capability <code>{capability}</code> <PausedByBudget pause={pauses.capability.get(capability)} what="capability" />
          </span>
        )}
        {step.agent && (
          <span className="muted">
            agent <code>{step.agent}</code> <PausedBadge paused={agentPaused(pauses, step.agent)} />
          </span>
        )}
        {step.usage && step.usage.count > 0 && <CostLine usage={step.usage} />}
        {step.child_run_id && (
          <Link to="/runs/$runId" params={{ runId: step.child_run_id }}>
            child run
          </Link>
        )}
        {step.reused && <span className="muted">kept from the earlier run</span>}
        {rerun && <RerunFromStep run={rerun} step={step} />}
      </div>
      <div className="timeline-bar" aria-hidden="true">
        {step.started_at && <span className={`status-${step.status}`} style={{ left: `${left}%`, width: `max(3px, ${right - left}%)` }} />}
      </div>
      <p className="timeline-times">
        {step.started_at ? (
          <>
            Started <time dateTime={step.started_at}>{new Date(step.started_at).toLocaleTimeString()}</time>
            {step.completed_at && (
              <>
                , ended <time dateTime={step.completed_at}>{new Date(step.completed_at).toLocaleTimeString()}</time>
              </>
            )}
            {took !== null && <> · {formatDuration(took)}</>}
          </>
        ) : (
          'Not started'
        )}
        {' · '}
        {step.attempt} {step.attempt === 1 ? 'attempt' : 'attempts'}
      </p>
      {step.error && <p className="step-error">{step.error}</p>}
      <StepCheckpoint step={step} />
      {step.started_at && <StepLogs runId={runId} step={step} />}
      {hasData && (
        <details>
          <summary>Input and output of {step.id}</summary>
          <div className="io">
            <div>
              <h3>Input</h3>
              <JsonView value={step.input} label={`Input of ${step.id}`} />
            </div>
            <div>
              <h3>Output</h3>
              <JsonView value={step.output} label={`Output of ${step.id}`} />
            </div>
          </div>
        </details>
      )}
    </li>
  );
}

/** The run's events, oldest first, paged on the server (the page in the URL). */
function RunEvents({ runId, search }: { runId: string; search: RunSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/runs/$runId' });
  const offset = ((search.events ?? 1) - 1) * EVENTS_PAGE_SIZE;
  const events = useQuery({
    queryKey: queryKeys.runs.events(runId, offset),
    queryFn: () => client.coordination.listRunEvents.page({ path: { run_id: runId }, query: { limit: EVENTS_PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = events.data?.total ?? 0;
  const span = pageWindow(search.events ?? 1, EVENTS_PAGE_SIZE, total);
  if (events.isPending) return <p className="muted">Loading…</p>;
  return (
    <>
      <ErrorNotice error={events.error} />
      <Table columns={['#', 'Event', 'Step', 'Detail', 'At']}>
        {events.data?.items.map((event) => (
          <tr key={event.seq}>
            <td>{event.seq}</td>
            <th scope="row">{event.type}</th>
            <td>{event.step_id ? <code>{event.step_id}</code> : <span className="muted">—</span>}</td>
            <td className="event-detail">
              {Object.keys(event.detail).length > 0 ? (
                <JsonView value={event.detail} label={`Detail of event ${event.seq}`} />
              ) : (
                <span className="muted">—</span>
              )}
            </td>
            <td>
              <time dateTime={event.at}>{new Date(event.at).toLocaleTimeString()}</time>
            </td>
          </tr>
        ))}
      </Table>
      <Pager span={span} total={total} noun="events" onPage={(page) => void navigate({ search: { events: page } })} />
    </>
  );
}
