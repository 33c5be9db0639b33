import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';

type Trigger = Item<'coordination.listTriggers'>;

export interface TriggersSearch {
  page?: number;
}

const PAGE_SIZE = 25;
/** A fire starts a run: the run events refresh the list (last fired, next slot). */
const TRIGGER_EVENTS = ['run.started'];
const FIRE_BADGE: Record<string, string> = {
  started: 'health-healthy',
  skipped: 'health-degraded',
  filtered: 'health-degraded',
  failed: 'health-unhealthy',
};

/** What sets a trigger off, in one line: its schedule, its topic or its hook path. */
function Source({ trigger }: { trigger: Trigger }) {
  const { config } = trigger;
  if (trigger.type === 'schedule') return <code>{`${config.cron ?? ''} ${config.timezone ?? 'UTC'}`}</code>;
  if (trigger.type === 'event') return <code>{config.topic}</code>;
  return <code>{`${config.method ?? 'POST'} /api/v1/coordination/hooks/${config.path ?? ''}`}</code>;
}

/** The plan triggers: what starts runs on a schedule, an event or a hook; their fires; enable and disable. */
export function TriggersView({ search }: { search: TriggersSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/triggers' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.triggers.all, events: TRIGGER_EVENTS });
  const triggers = useQuery({
    queryKey: queryKeys.triggers.list({ offset }),
    queryFn: () => client.coordination.listTriggers.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = triggers.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>Triggers</h1>
      <ListBody
        query={triggers}
        total={total}
        empty={
          <>
            <p>
              <strong>No triggers yet.</strong> A trigger starts runs of a plan on a cron schedule, on every event of a topic, or when its
              hook is called (<code>POST /api/v1/coordination/triggers</code>).
            </p>
          </>
        }
      >
        <Table columns={['Trigger', 'Plan', 'Type', 'On', 'Next fire', 'Last fired', 'State', { label: 'Actions', visuallyHidden: true }]}>
          {triggers.data?.items.map((trigger) => (
            <TriggerRow key={trigger.id} trigger={trigger} now={triggers.dataUpdatedAt} />
          ))}
        </Table>
        <Pager span={span} total={total} noun="triggers" onPage={(page) => void navigate({ search: { page } })} />
      </ListBody>
    </section>
  );
}

function TriggerRow({ trigger, now }: { trigger: Trigger; now: number }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const toggle = useMutation({
    mutationFn: () => client.coordination.updateTrigger({ path: { trigger_id: trigger.id }, body: { enabled: !trigger.enabled } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.triggers.all }),
  });
  return (
    <tr data-trigger={trigger.id}>
      <th scope="row">
        <code>{trigger.id}</code>
        <Fires triggerId={trigger.id} />
      </th>
      <td>
        <Link to="/plans/$planId" params={{ planId: trigger.plan_id }}>
          {trigger.plan_id}
        </Link>
      </td>
      <td>{trigger.type}</td>
      <td>
        <Source trigger={trigger} />
      </td>
      <td>{trigger.next_fire_at ? relativeTime(trigger.next_fire_at, now) : <span className="muted">—</span>}</td>
      <td>{trigger.last_fired_at ? relativeTime(trigger.last_fired_at, now) : <span className="muted">never</span>}</td>
      <td>
        <span className={`badge ${trigger.enabled ? 'health-healthy' : 'health-degraded'}`}>
          {trigger.enabled ? 'enabled' : 'disabled'}
        </span>
      </td>
      <td className="actions">
        {can('plans:write') && (
          <button type="button" className="secondary" disabled={toggle.isPending} onClick={() => toggle.mutate()}>
            {trigger.enabled ? 'Disable' : 'Enable'}
          </button>
        )}
        <ErrorNotice error={toggle.error} />
      </td>
    </tr>
  );
}

/** A trigger's latest fires, loaded when opened: what each did, and the run it started. */
function Fires({ triggerId }: { triggerId: string }) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const fires = useQuery({
    queryKey: queryKeys.triggers.fires(triggerId),
    queryFn: () => client.coordination.listTriggerFires.page({ path: { trigger_id: triggerId }, query: { limit: 20 } }),
    enabled: open,
  });
  return (
    <details className="trigger-fires" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>Fires</summary>
      <ErrorNotice error={fires.error} />
      {fires.data &&
        (fires.data.items.length === 0 ? (
          <p className="muted">No fires yet.</p>
        ) : (
          <ol>
            {fires.data.items.map((fire) => (
              <li key={fire.id} data-fire={fire.id}>
                <span className={`badge ${FIRE_BADGE[fire.outcome] ?? ''}`}>{fire.outcome}</span>{' '}
                <time dateTime={fire.at} title={fire.at}>
                  {relativeTime(fire.at, fires.dataUpdatedAt)}
                </time>
                {fire.run_id && (
                  <>
                    {' '}
                    <Link to="/runs/$runId" params={{ runId: fire.run_id }}>
                      {fire.run_id}
                    </Link>
                  </>
                )}
                {fire.reason && <span className="muted"> — {fire.reason}</span>}
              </li>
            ))}
          </ol>
        ))}
    </details>
  );
}
