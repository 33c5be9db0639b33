import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item, Result } from '../../../src/client/browser.js';
import { formatInZone } from './cron-preview.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { pageWindow, relativeTime } from '../format.js';
import { JsonView } from '../json-view.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { CronPreview, RoutineForm } from './routine-form.js';
import { queryKeys } from '../query-keys.js';
import './routines.css';

type Routine = Result<'routines.get'>;

export interface RoutinesSearch {
  page?: number;
  state?: 'enabled' | 'paused';
  trigger?: 'cron' | 'webhook';
}

export interface RoutineSearch {
  /** The page of executions. */
  page?: number;
}

const PAGE_SIZE = 25;
const ROUTINE_EVENTS = ['routine.>'];
/** An execution's status in the console's tones (the health badges' colours). */
const EXECUTION_BADGE: Record<string, string> = {
  success: 'health-healthy',
  failed: 'health-unhealthy',
  pending: 'health-degraded',
  running: 'health-degraded',
};

/** Every change to routines and their executions refreshes every routines query. */
function useLiveRoutines() {
  useLiveRefresh({ queryKey: queryKeys.routines.all, events: ROUTINE_EVENTS });
}

/** Routines with their schedule and next fire; pause, resume and trigger from the list. */
export function RoutinesView({ search }: { search: RoutinesSearch }) {
  const { client, can } = useSession();
  const navigate = useNavigate({ from: '/routines' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRoutines();
  const filter = { enabled: search.state === undefined ? undefined : search.state === 'enabled', trigger_type: search.trigger };
  const routines = useQuery({
    queryKey: queryKeys.routines.list({ offset, ...filter }),
    queryFn: () => client.routines.list.page({ query: { limit: PAGE_SIZE, offset, ...filter } }),
    placeholderData: keepPreviousData,
  });
  const total = routines.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  const filtered = search.state !== undefined || search.trigger !== undefined;

  return (
    <section>
      <div className="title-row">
        <h1>Routines</h1>
        {can('routines:write') && (
          <Link to="/routines/new" className="button">
            New routine
          </Link>
        )}
      </div>
      <form className="filters" role="search" onSubmit={(event) => event.preventDefault()}>
        <label>
          State
          <select
            value={search.state ?? ''}
            onChange={(event) =>
              void navigate({ search: { ...search, state: (event.target.value || undefined) as RoutinesSearch['state'], page: undefined } })
            }
          >
            <option value="">any</option>
            <option value="enabled">enabled</option>
            <option value="paused">paused</option>
          </select>
        </label>
        <label>
          Trigger
          <select
            value={search.trigger ?? ''}
            onChange={(event) =>
              void navigate({
                search: { ...search, trigger: (event.target.value || undefined) as RoutinesSearch['trigger'], page: undefined },
              })
            }
          >
            <option value="">any</option>
            <option value="cron">cron</option>
            <option value="webhook">webhook</option>
          </select>
        </label>
      </form>
      <ListBody
        query={routines}
        total={total}
        unmatched={filtered ? { noun: 'routine', to: '/routines' } : null}
        empty={
          <>
            <p>
              <strong>No routines yet.</strong> A routine sends its agent a message on a cron schedule or when its webhook is called.
            </p>
            {can('routines:write') && <Link to="/routines/new">Create the first routine</Link>}
          </>
        }
      >
        <Table columns={['Routine', 'Trigger', 'Agent', 'Next fire', 'Last run', 'State', { label: 'Actions', visuallyHidden: true }]}>
          {routines.data?.items.map((routine) => (
            <tr key={routine.id} data-routine={routine.id}>
              <th scope="row">
                <Link to="/routines/$routineId" params={{ routineId: routine.id }}>
                  {routine.name}
                </Link>
              </th>
              <td>
                <Schedule routine={routine} />
              </td>
              <td>
                <code>{routine.target_agent}</code>
              </td>
              <td>
                <When iso={routine.next_run_at} now={routines.dataUpdatedAt} timezone={routine.timezone} />
              </td>
              <td>
                <When iso={routine.last_run_at} now={routines.dataUpdatedAt} timezone={routine.timezone} />
              </td>
              <td>
                <State routine={routine} />
              </td>
              <td className="actions">
                <RoutineActions routine={routine} />
              </td>
            </tr>
          ))}
        </Table>
        <Pager span={span} total={total} noun="routines" onPage={(page) => void navigate({ search: { ...search, page } })} />
      </ListBody>
    </section>
  );
}

function Schedule({ routine }: { routine: Item<'routines.list'> }) {
  if (routine.trigger_type === 'webhook') return <span>webhook</span>;
  return (
    <span>
      <code>{routine.cron_expression}</code> <span className="muted">{routine.timezone}</span>
    </span>
  );
}

/** A time relative to now, with the time in the routine's zone on hover. */
function When({ iso, now, timezone }: { iso: string | null; now: number; timezone: string }) {
  if (iso === null) return <span className="muted">—</span>;
  return (
    <time dateTime={iso} title={formatInZone(new Date(iso), timezone)}>
      {relativeTime(iso, now)}
    </time>
  );
}

function State({ routine }: { routine: Routine }) {
  return (
    <span className={`badge ${routine.enabled ? 'health-healthy' : 'health-degraded'}`}>{routine.enabled ? 'enabled' : 'paused'}</span>
  );
}

/** Pause or resume (PATCH enabled) and trigger now (an execution at once, whatever the schedule). */
function RoutineActions({ routine }: { routine: Routine }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: queryKeys.routines.all });
  const toggle = useMutation({
    mutationFn: () => client.routines.update({ path: { id: routine.id }, body: { enabled: !routine.enabled } }),
    onSuccess: refresh,
  });
  const trigger = useMutation({
    mutationFn: () => client.routines.trigger({ path: { id: routine.id }, body: {} }),
    onSuccess: refresh,
  });
  if (!can('routines:write')) return null;
  return (
    <>
      <button type="button" className="secondary" disabled={toggle.isPending} onClick={() => toggle.mutate()}>
        {routine.enabled ? 'Pause' : 'Resume'}
      </button>
      <button type="button" className="secondary" disabled={trigger.isPending} onClick={() => trigger.mutate()}>
        Trigger now
      </button>
      <ErrorNotice error={toggle.error ?? trigger.error} />
    </>
  );
}

/** Creating a routine; once saved, its page. */
export function NewRoutineView() {
  const navigate = useNavigate();
  return (
    <section>
      <h1>New routine</h1>
      <RoutineForm onSaved={(routine) => void navigate({ to: '/routines/$routineId', params: { routineId: routine.id } })} />
    </section>
  );
}

/** One routine: its settings, actions, edit form, and its executions with their output. */
export function RoutineView({ routineId, search }: { routineId: string; search: RoutineSearch }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState(false);
  useLiveRoutines();
  const routine = useQuery({
    queryKey: queryKeys.routines.detail(routineId),
    queryFn: () => client.routines.get({ path: { id: routineId } }),
  });
  if (routine.isPending) return <p className="muted">Loading…</p>;
  if (!routine.data) {
    return (
      <section>
        <h1>Routine</h1>
        <ErrorNotice error={routine.error} />
        <Link to="/routines">Back to routines</Link>
      </section>
    );
  }
  const data = routine.data;
  return (
    <section>
      <p>
        <Link to="/routines">← Routines</Link>
      </p>
      <div className="title-row">
        <h1>{data.name}</h1>
        <State routine={data} />
      </div>
      <div className="routine-actions">
        <RoutineActions routine={data} />
        {!editing && can('routines:write') && (
          <button type="button" className="secondary" onClick={() => setEditing(true)}>
            Edit
          </button>
        )}
      </div>
      {editing ? (
        <RoutineForm
          routine={data}
          onCancel={() => setEditing(false)}
          onSaved={(saved) => {
            queryClient.setQueryData(queryKeys.routines.detail(routineId), saved);
            void queryClient.invalidateQueries({ queryKey: queryKeys.routines.all });
            setEditing(false);
          }}
        />
      ) : (
        <RoutineDetails routine={data} now={routine.dataUpdatedAt} />
      )}
      <Executions routine={data} search={search} />
    </section>
  );
}

function RoutineDetails({ routine, now }: { routine: Routine; now: number }) {
  return (
    <div className="card routine-details">
      <dl className="facts">
        <dt>Trigger</dt>
        <dd>
          <Schedule routine={routine} />
        </dd>
        <dt>Target agent</dt>
        <dd>
          <code>{routine.target_agent}</code>
        </dd>
        <dt>Next fire</dt>
        <dd>
          <When iso={routine.next_run_at} now={now} timezone={routine.timezone} />
        </dd>
        <dt>Last run</dt>
        <dd>
          <When iso={routine.last_run_at} now={now} timezone={routine.timezone} />
        </dd>
        <dt>While running</dt>
        <dd>{routine.overlap === 'skip' ? 'skip a fire' : 'fire anyway'}</dd>
        <dt>Missed fires</dt>
        <dd>{routine.catch_up}</dd>
        <dt>Timeout</dt>
        <dd>{routine.timeout_seconds} s</dd>
        {routine.description && (
          <>
            <dt>Description</dt>
            <dd>{routine.description}</dd>
          </>
        )}
      </dl>
      {routine.trigger_type === 'cron' && routine.enabled && routine.cron_expression && (
        <CronPreview expression={routine.cron_expression} timezone={routine.timezone} />
      )}
      <h3>Payload</h3>
      <JsonView value={routine.payload} label="Payload" />
    </div>
  );
}

function Executions({ routine, search }: { routine: Routine; search: RoutineSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/routines/$routineId' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const executions = useQuery({
    queryKey: queryKeys.routines.executions(routine.id, offset),
    queryFn: () => client.routines.listExecutions.page({ path: { id: routine.id }, query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = executions.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section aria-labelledby="executions-title">
      <h2 id="executions-title">Executions</h2>
      <ErrorNotice error={executions.error} />
      {executions.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !executions.isError ? (
        <p className="notice empty">
          No executions yet. Use “Trigger now” to run it at once{routine.trigger_type === 'cron' ? ', or wait for its next fire' : ''}.
        </p>
      ) : (
        <>
          <Table columns={['Execution', 'Status', 'Trigger', 'Started', 'Completed', 'Output']}>
            {executions.data?.items.map((execution) => (
              <tr key={execution.id} data-execution={execution.id}>
                <th scope="row">
                  <code>{execution.id}</code>
                </th>
                <td>
                  <span className={`badge ${EXECUTION_BADGE[execution.status] ?? ''}`}>{execution.status}</span>
                </td>
                <td>{execution.trigger}</td>
                <td>
                  <When iso={execution.started_at ?? execution.created_at} now={executions.dataUpdatedAt} timezone={routine.timezone} />
                </td>
                <td>
                  <When iso={execution.completed_at} now={executions.dataUpdatedAt} timezone={routine.timezone} />
                </td>
                <td className="output">
                  {execution.output === null ? (
                    <span className="muted">—</span>
                  ) : (
                    <JsonView value={execution.output} label={`Output of ${execution.id}`} />
                  )}
                </td>
              </tr>
            ))}
          </Table>
          <Pager span={span} total={total} noun="executions" onPage={(page) => void navigate({ search: { page } })} />
        </>
      )}
    </section>
  );
}
