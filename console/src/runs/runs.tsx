import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ListBody } from '../list-body.js';
import { elapsed, formatDuration, pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { ChoiceFilter, filterText, FilterForm, TextFilter, TimeWindowFilter } from '../filter-fields.js';
import { metadataFilter, runsQuery, type RunsSearch } from './run-search.js';
import { useSession } from '../session.js';
import { RUN_STATUSES, type RunStatus } from './run-status.js';
import { StatusBadge } from './status.js';
import { Table } from '../table.js';
import { draftOf, windowOf } from '../time-window.js';
import { StartRunForm, type Plan } from './start-run.js';
import { ReplayRuns } from './replay-runs.js';
import { queryKeys } from '../query-keys.js';
import './runs.css';

export type { RunsSearch } from './run-search.js';
export type Run = Item<'coordination.listRuns'>;

const PAGE_SIZE = 25;
/** What changes a run: its own events, and the decisions and inputs of its human steps. */
export const RUN_EVENTS = ['run.>', 'approval.*', 'input.*'];
// The plans' aliases for the runs' plan ids and the plan filter's suggestions: one page of the largest size.
const PLANS_LOOKUP = 500;

/** The plans, for their aliases (the runs name plans by id). */
function usePlans() {
  const { client } = useSession();
  return useQuery({
    queryKey: queryKeys.plans.lookup(),
    queryFn: () => client.coordination.listPlans({ query: { limit: PLANS_LOOKUP } }),
    staleTime: 60_000,
  });
}

/** Every run, newest first, filtered by plan, status and start time (in the URL), paged on the server. */
export function RunsView({ search }: { search: RunsSearch }) {
  const { client, can } = useSession();
  const navigate = useNavigate({ from: '/runs' });
  const [starting, setStarting] = useState(false);
  const [replaying, setReplaying] = useState(false);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const filters = {
    plan: search.plan,
    status: search.status,
    tag: search.tag,
    metadata: search.metadata,
    within: search.within,
    from: search.from,
    to: search.to,
  };
  useLiveRefresh({ queryKey: queryKeys.runs.all, events: RUN_EVENTS });
  const runs = useQuery({
    queryKey: queryKeys.runs.list({ ...filters, offset }),
    // A relative window is measured from each fetch's now: live refreshes move it along.
    queryFn: () => client.coordination.listRuns.page({ query: { ...runsQuery(search), limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const plans = usePlans();
  const aliases = new Map(plans.data?.map((plan) => [plan.id, plan.alias]));
  const total = runs.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  const filtered = Object.values(filters).some((value) => value !== undefined);

  return (
    <section>
      <div className="view-heading">
        <h1>Runs</h1>
        {can('runs:write') && (
          <button type="button" className="secondary" aria-expanded={starting} onClick={() => setStarting(!starting)}>
            Start a run
          </button>
        )}
        {can('runs:write') && (
          <button type="button" className="secondary" aria-expanded={replaying} onClick={() => setReplaying(!replaying)}>
            Replay…
          </button>
        )}
      </div>
      {starting && can('runs:write') && <StartRunPicker plans={plans.data ?? []} />}
      {/* Sibling keys must differ: with the filters' key on both, React lost track of the panel and
          showed copies of it without the replay's outcome. */}
      {replaying && can('runs:write') && (
        <ReplayRuns key={`replay ${JSON.stringify(filters)}`} search={search} onClose={() => setReplaying(false)} />
      )}
      <RunFilters
        key={`filters ${JSON.stringify(filters)}`}
        search={search}
        plans={plans.data ?? []}
        onApply={(next) => void navigate({ search: next })}
      />
      <ListBody
        query={runs}
        total={total}
        unmatched={filtered ? { noun: 'run', to: '/runs' } : null}
        empty={
          <>
            <p>
              <strong>No runs yet.</strong> Start one with <em>Start a run</em> above, from a plan under <Link to="/plans">Plans</Link>, or
              with <code>POST /api/v1/coordination/runs</code>.
            </p>
          </>
        }
      >
        <Table columns={['Run', 'Plan', 'Status', 'Current step', 'Started', 'Duration', 'Started by']}>
          {runs.data?.items.map((run) => (
            <RunRow key={run.id} run={run} alias={aliases.get(run.plan_id)} now={runs.dataUpdatedAt} />
          ))}
        </Table>
        <Pager
          span={span}
          total={total}
          estimated={runs.data?.totalEstimated}
          noun="runs"
          onPage={(page) => void navigate({ search: { ...search, page } })}
        />
      </ListBody>
    </section>
  );
}

function RunRow({ run, alias, now }: { run: Run; alias: string | undefined; now: number }) {
  const took = elapsed(run.started_at, run.completed_at, now);
  return (
    <tr data-run={run.id}>
      <th scope="row">
        <Link to="/runs/$runId" params={{ runId: run.id }}>
          <code>{run.id}</code>
        </Link>
      </th>
      <td>
        <Link to="/plans/$planId" params={{ planId: run.plan_id }} search={{ version: run.plan_version }}>
          {alias ?? <code>{run.plan_id}</code>}
        </Link>{' '}
        <span className="muted">v{run.plan_version}</span>
        {run.tags.length > 0 && <Chips label="Tags" items={run.tags} />}
        {Object.keys(run.metadata).length > 0 && (
          <Chips label="Metadata" items={Object.entries(run.metadata).map(([key, value]) => `${key}=${value}`)} />
        )}
      </td>
      <td>
        <StatusBadge status={run.status} />
      </td>
      <td>{run.current_step ? <code>{run.current_step}</code> : <span className="muted">—</span>}</td>
      <td>
        <time dateTime={run.started_at} title={run.started_at}>
          {relativeTime(run.started_at, now)}
        </time>
      </td>
      <td>{took === null ? '—' : formatDuration(took)}</td>
      <td>{run.created_by}</td>
    </tr>
  );
}

function Chips({ label, items }: { label: string; items: string[] }) {
  return (
    <ul className="chips" aria-label={label}>
      {items.map((item) => (
        <li key={item} className="chip">
          {item}
        </li>
      ))}
    </ul>
  );
}

/** Choose a plan, then its input. */
function StartRunPicker({ plans }: { plans: Plan[] }) {
  const [planId, setPlanId] = useState('');
  const plan = plans.find((candidate) => candidate.id === planId);
  if (plans.length === 0) {
    return (
      <p className="notice">
        No plan to run yet: create one with <code>POST /api/v1/coordination/plans</code> (see <Link to="/plans">Plans</Link>).
      </p>
    );
  }
  return (
    <div className="start-run-picker">
      <label>
        Plan to run
        <select value={planId} onChange={(event) => setPlanId(event.target.value)}>
          <option value="">Choose a plan…</option>
          {plans.map((candidate) => (
            <option key={candidate.id} value={candidate.id}>
              {candidate.alias}
            </option>
          ))}
        </select>
      </label>
      {plan && <StartRunForm key={plan.id} plan={plan} />}
    </div>
  );
}

/** The runs' filters, applied into the URL. */
function RunFilters({ search, plans, onApply }: { search: RunsSearch; plans: Plan[]; onApply(next: RunsSearch): void }) {
  const [plan, setPlan] = useState(search.plan ?? '');
  const [status, setStatus] = useState<RunStatus | ''>(search.status ?? '');
  const [tag, setTag] = useState(search.tag ?? '');
  const [metadata, setMetadata] = useState(search.metadata ?? '');
  const [started, setStarted] = useState(draftOf(search));
  const apply = () =>
    onApply({
      plan: filterText(plan),
      status: status || undefined,
      tag: filterText(tag),
      metadata: metadataFilter(metadata),
      ...windowOf(started),
    });
  return (
    <FilterForm label="Filter runs" onApply={apply}>
      <TextFilter
        label="Plan"
        value={plan}
        onChange={setPlan}
        placeholder="alias or id"
        suggestions={plans.map((candidate) => candidate.alias)}
      />
      <TextFilter label="Tag" value={tag} onChange={setTag} placeholder="e.g. customer:acme" />
      <TextFilter label="Metadata" value={metadata} onChange={setMetadata} placeholder="key=value" />
      <ChoiceFilter label="Status" value={status} onChange={setStatus} choices={RUN_STATUSES} any="Any status" />
      <TimeWindowFilter label="Started" value={started} onChange={setStarted} />
    </FilterForm>
  );
}
