import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { pageWindow, relativeTime } from '../format.js';
import { JsonView } from '../json-view.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { PlanGraph } from './plan-graph.js';
import type { PlanStep } from './plan-layout.js';
import { useSession } from '../session.js';
import { StatusBadge } from '../runs/status.js';
import { Table } from '../table.js';
import { RUN_EVENTS } from '../runs/runs.js';
import { StartRunForm } from '../runs/start-run.js';
import { queryKeys } from '../query-keys.js';
import { BUDGET_EVENTS, PausedByBudget, usePauses, type Pauses } from '../usage/pauses.js';
import '../runs/runs.css';

export interface PlansSearch {
  page?: number;
}

export interface PlanSearch {
  /** An earlier version to show (the current one when absent). */
  version?: number;
}

const PAGE_SIZE = 25;
const RECENT_RUNS = 10;

/** Every plan (current versions), paged on the server. Plans change through the API only: no event announces them, so the list is fetched on each visit. */
export function PlansView({ search }: { search: PlansSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/plans' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const plans = useQuery({
    queryKey: queryKeys.plans.list({ offset }),
    queryFn: () => client.coordination.listPlans.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh({ queryKey: queryKeys.plans.all, events: BUDGET_EVENTS });
  const total = plans.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>Plans</h1>
      <ListBody
        query={plans}
        total={total}
        empty={
          <>
            <p>
              <strong>No plans yet.</strong> A plan is a set of typed steps (agent, human approval, condition…) a run follows.
            </p>
            <ol>
              <li>
                Draft one from a goal with <code>POST /api/v1/coordination/plans/generate</code>, or write its steps yourself.
              </li>
              <li>
                Save it with <code>POST /api/v1/coordination/plans</code> (an alias and its steps); it then appears here, ready to run.
              </li>
            </ol>
          </>
        }
      >
        <Table columns={['Plan', 'Description', 'Steps', 'Version', 'Updated']}>
          {plans.data?.items.map((plan) => (
            <tr key={plan.id} data-plan={plan.alias}>
              <th scope="row">
                <Link to="/plans/$planId" params={{ planId: plan.id }}>
                  {plan.alias}
                </Link>{' '}
                <PausedByBudget pause={plan.paused} what="plan" />
              </th>
              <td>{plan.description ?? <span className="muted">—</span>}</td>
              <td>{plan.steps.length}</td>
              <td>{plan.version}</td>
              <td>
                <time dateTime={plan.updated_at} title={plan.updated_at}>
                  {relativeTime(plan.updated_at, plans.dataUpdatedAt)}
                </time>
              </td>
            </tr>
          ))}
        </Table>
        <Pager span={span} total={total} noun="plans" onPage={(page) => void navigate({ search: { page } })} />
      </ListBody>
    </section>
  );
}

/** One plan: its graph and steps at a version (earlier versions too), its recent runs, and a form to start one. */
export function PlanDetailView({ planId, search }: { planId: string; search: PlanSearch }) {
  const { client, can } = useSession();
  const navigate = useNavigate({ from: '/plans/$planId' });
  const pauses = usePauses();
  useLiveRefresh({ queryKey: queryKeys.plans.detail(planId), events: BUDGET_EVENTS });
  const current = useQuery({
    queryKey: queryKeys.plans.detail(planId),
    queryFn: () => client.coordination.getPlan({ path: { plan_id: planId } }),
  });
  const latest = current.data?.version;
  const wanted = search.version !== undefined && latest !== undefined && search.version < latest ? search.version : undefined;
  const earlier = useQuery({
    queryKey: queryKeys.plans.version(current.data?.id, wanted),
    queryFn: () => client.coordination.getPlanVersion({ path: { plan_id: current.data!.id, version: wanted! } }),
    enabled: wanted !== undefined && current.data !== undefined,
    staleTime: Infinity,
  });
  if (current.isPending) return <p className="muted">Loading…</p>;
  if (!current.data) {
    return (
      <section>
        <h1>Plan {planId}</h1>
        <ErrorNotice error={current.error} />
        <Link to="/plans">All plans</Link>
      </section>
    );
  }
  const plan = wanted === undefined ? current.data : earlier.data;
  const versions = Array.from({ length: current.data.version }, (_, index) => current.data.version - index);
  return (
    <section className="plan-detail">
      <p className="breadcrumb">
        <Link to="/plans">Plans</Link> /
      </p>
      <div className="view-heading">
        <h1>{current.data.alias}</h1>
        <label className="inline">
          Version
          <select
            value={wanted ?? current.data.version}
            onChange={(event) => {
              const version = Number(event.target.value);
              void navigate({ search: { version: version === current.data.version ? undefined : version } });
            }}
          >
            {versions.map((version) => (
              <option key={version} value={version}>
                {version === current.data.version ? `${version} (current)` : version}
              </option>
            ))}
          </select>
        </label>
      </div>
      <PausedByBudget pause={current.data.paused} what="plan" />
      <ErrorNotice error={earlier.error} />
      {plan && (
        <>
          {plan.description && <p>{plan.description}</p>}
          <p className="muted">
            Version {plan.version}, saved by {plan.created_by}{' '}
            <time dateTime={plan.updated_at}>{new Date(plan.updated_at).toLocaleString()}</time>
            {wanted !== undefined && ' — an earlier version: new runs use the current one.'}
          </p>
          <PlanGraph steps={plan.steps} label={`Steps of plan ${plan.alias}, version ${plan.version}`} />
          <h2>Steps</h2>
          <Table columns={['Step', 'Type', 'After', 'Does']}>
            {plan.steps.map((step) => (
              <tr key={step.id} data-step={step.id}>
                <th scope="row">
                  <code>{step.id}</code>
                </th>
                <td>{step.type}</td>
                <td>{step.depends_on?.length ? step.depends_on.join(', ') : <span className="muted">—</span>}</td>
                <td>
                  {stepSummary(step)} <StepCapabilityPause step={step} pauses={pauses} />
                </td>
              </tr>
            ))}
          </Table>
          {plan.output && (
            <>
              <h2>Output template</h2>
              <JsonView value={plan.output} label="Output template" />
            </>
          )}
        </>
      )}
      <h2>Recent runs</h2>
      <RecentRuns planId={current.data.id} alias={current.data.alias} />
      {can('runs:write') && <StartRunForm key={current.data.version} plan={current.data} />}
    </section>
  );
}

/** The pause of the capability an agent step (or a parallel step's repeated one) names: its steps wait. */
function StepCapabilityPause({ step, pauses }: { step: PlanStep; pauses: Pauses }) {
  const capability = step.capability ?? step.step?.capability;
  if (capability === undefined) return null;
  return <PausedByBudget pause={pauses.capability.get(capability)} what="capability" label={`capability ${capability} paused`} compact />;
}

/** What a step does, in a few words. */
function stepSummary(step: PlanStep): string {
  switch (step.type) {
    case 'agent':
      return step.agent ? `agent ${step.agent}` : `an agent with ${step.capability ?? '?'}`;
    case 'human_approval':
    case 'human_input':
      return step.prompt ?? '';
    case 'condition':
    case 'transform':
      return step.expression ?? (step.output === undefined ? '' : JSON.stringify(step.output));
    case 'parallel':
      return step.steps ? `runs ${step.steps.join(', ')} together` : `repeats a ${step.step?.type ?? ''} step for each item`;
    case 'wait':
      return step.seconds ? `${step.seconds} s` : step.until ? `until ${step.until}` : step.event ? `for ${step.event.topic}` : '';
    case 'sub_plan':
      return `runs plan ${step.plan_id ?? '?'}`;
    default:
      return '';
  }
}

function RecentRuns({ planId, alias }: { planId: string; alias: string }) {
  const { client } = useSession();
  useLiveRefresh({ queryKey: queryKeys.runs.all, events: RUN_EVENTS });
  const runs = useQuery({
    queryKey: queryKeys.runs.list({ plan: planId, recent: true }),
    queryFn: () => client.coordination.listRuns.page({ query: { plan_id: planId, limit: RECENT_RUNS } }),
  });
  if (runs.isPending) return <p className="muted">Loading…</p>;
  const total = runs.data?.total ?? 0;
  return (
    <>
      <ErrorNotice error={runs.error} />
      {total === 0 && !runs.isError ? (
        <p className="notice empty">No runs of this plan yet: start one below.</p>
      ) : (
        <>
          <ul className="recent-runs">
            {runs.data?.items.map((run) => (
              <li key={run.id} data-run={run.id}>
                <Link to="/runs/$runId" params={{ runId: run.id }}>
                  <code>{run.id}</code>
                </Link>{' '}
                <StatusBadge status={run.status} />{' '}
                <time className="muted" dateTime={run.started_at}>
                  {relativeTime(run.started_at, runs.dataUpdatedAt)}
                </time>
              </li>
            ))}
          </ul>
          {total > RECENT_RUNS && (
            <Link to="/runs" search={{ plan: alias }}>
              All {total} runs of {alias}
            </Link>
          )}
        </>
      )}
    </>
  );
}
