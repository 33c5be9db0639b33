import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import type { Item } from '../../../src/client/browser.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import './alerts.css';

type Alert = Item<'alerts.list'>;
export type AlertState = Alert['state'];

export interface AlertsSearch {
  page?: number;
  state?: AlertState;
}

export const ALERT_STATES: readonly AlertState[] = ['firing', 'resolved'];
/** Alerts fire and resolve as events: they refresh the lists. */
export const ALERT_EVENTS = ['alert.*'];
const PAGE_SIZE = 25;

/** Alerts, newest first, firing and resolved; a firing one is acknowledged here. */
export function AlertsView({ search }: { search: AlertsSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/alerts' });
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.alerts.all, events: ALERT_EVENTS });
  const alerts = useQuery({
    queryKey: queryKeys.alerts.list({ offset, state: search.state }),
    queryFn: () =>
      client.alerts.list.page({ query: { limit: PAGE_SIZE, offset, ...(search.state !== undefined && { state: search.state }) } }),
    placeholderData: keepPreviousData,
  });
  const total = alerts.data?.total ?? 0;
  return (
    <section>
      <h1>Alerts</h1>
      <div className="filters">
        <label>
          State
          <select
            value={search.state ?? ''}
            onChange={(event) =>
              void navigate({ search: { state: ALERT_STATES.find((state) => state === event.target.value), page: undefined } })
            }
          >
            <option value="">Any</option>
            {ALERT_STATES.map((state) => (
              <option key={state}>{state}</option>
            ))}
          </select>
        </label>
      </div>
      <ListBody query={alerts} total={total} empty={`No alerts${search.state ? ` ${search.state}` : ''}. Alert rules are under Settings.`}>
        <AlertsTable alerts={alerts.data?.items ?? []} now={alerts.dataUpdatedAt} />
        <Pager
          span={pageWindow(search.page ?? 1, PAGE_SIZE, total)}
          total={total}
          noun="alerts"
          onPage={(page) => void navigate({ search: { ...search, page } })}
        />
      </ListBody>
    </section>
  );
}

function AlertsTable({ alerts, now }: { alerts: readonly Alert[]; now: number }) {
  return (
    <Table columns={['Rule', 'State', 'Severity', 'Value', 'Since', { label: 'Actions', visuallyHidden: true }]}>
      {alerts.map((alert) => (
        <AlertRow key={alert.id} alert={alert} now={now} />
      ))}
    </Table>
  );
}

function AlertRow({ alert, now }: { alert: Alert; now: number }) {
  const { client, can } = useSession();
  const queryClient = useQueryClient();
  const acknowledge = useMutation({
    mutationFn: () => client.alerts.acknowledge({ path: { id: alert.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.alerts.all }),
  });
  return (
    <tr data-alert={alert.id}>
      <th scope="row">
        {alert.rule_name}
        {alert.detail && <div className="muted wrap-anywhere">{alert.detail}</div>}
      </th>
      <td>
        <span className={`badge ${alert.state === 'firing' ? 'health-unhealthy' : 'health-healthy'}`}>{alert.state}</span>
        {alert.resolved_at && <div className="muted">resolved {relativeTime(alert.resolved_at, now)}</div>}
      </td>
      <td>{alert.severity}</td>
      <td>{alert.value}</td>
      <td>
        <time dateTime={alert.since} title={alert.since}>
          {relativeTime(alert.since, now)}
        </time>
      </td>
      <td className="actions">
        {alert.acknowledged_at ? (
          <span className="muted">acknowledged by {alert.acknowledged_by}</span>
        ) : (
          alert.state === 'firing' &&
          can('webhooks:admin') && (
            <button type="button" className="secondary" disabled={acknowledge.isPending} onClick={() => acknowledge.mutate()}>
              Acknowledge
            </button>
          )
        )}
        <ErrorNotice error={acknowledge.error} />
      </td>
    </tr>
  );
}
