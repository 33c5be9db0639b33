import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from '@tanstack/react-router';
import type { Item } from '../../../src/client/browser.js';
import { awaitsDelivery, nextDeliveryCheck } from './delivery-refresh.js';
import { FEED_SIZE } from '../event-hub.js';
import { ErrorNotice } from '../errors.js';
import { ChoiceFilter } from '../filter-fields.js';
import { pageWindow, relativeTime } from '../format.js';
import { useEventFeed, useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { EnableToggle, WEBHOOK_EVENTS, WebhookState } from './webhooks.js';
import { queryKeys } from '../query-keys.js';
import './webhooks.css';

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveriesSearch {
  page?: number;
  status?: DeliveryStatus;
}

type Delivery = Item<'webhooks.deliveries'>;

const PAGE_SIZE = 25;
const STATUS_BADGE: Record<DeliveryStatus, string> = {
  pending: 'health-degraded',
  delivered: 'health-healthy',
  failed: 'health-unhealthy',
};

/** One webhook and its delivery log: every attempt's status code, error and next retry. */
export function WebhookDeliveriesView({ webhookId, search }: { webhookId: string; search: DeliveriesSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/settings/webhooks/$webhookId' });
  const queryClient = useQueryClient();
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const webhook = useQuery({
    queryKey: queryKeys.webhooks.detail(webhookId),
    queryFn: () => client.webhooks.get({ path: { id: webhookId } }),
  });
  // A new delivery follows an event of the webhook's own types.
  useLiveRefresh({ queryKey: queryKeys.webhooks.all, events: [...WEBHOOK_EVENTS, ...(webhook.data?.types ?? [])] });
  const feed = useEventFeed(FEED_SIZE);
  const deliveries = useQuery({
    queryKey: queryKeys.webhooks.deliveriesPage(webhookId, { offset, status: search.status }),
    queryFn: () =>
      client.webhooks.deliveries.page({
        path: { id: webhookId },
        query: { limit: PAGE_SIZE, offset, ...(search.status ? { status: search.status } : {}) },
      }),
    placeholderData: keepPreviousData,
    // Deliveries append no event: see delivery-refresh.ts.
    refetchInterval: (query) => {
      const shown = query.state.data?.items ?? [];
      const now = Date.now();
      return nextDeliveryCheck(shown, now, webhook.data !== undefined && awaitsDelivery(feed, webhook.data, shown, now));
    },
  });
  const test = useMutation({
    mutationFn: () => client.webhooks.test({ path: { id: webhookId } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.webhooks.deliveries(webhookId) }),
  });
  const total = deliveries.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);

  return (
    <section>
      <p>
        <Link to="/settings/webhooks">← Webhooks</Link>
      </p>
      <ErrorNotice error={webhook.error} />
      {webhook.data && (
        <>
          <div className="webhook-summary">
            <h1>{webhook.data.url}</h1>
            <WebhookState webhook={webhook.data} now={webhook.dataUpdatedAt} />
          </div>
          {webhook.data.description && <p>{webhook.data.description}</p>}
          <p>
            Receives{' '}
            {webhook.data.types.map((type, index) => (
              <span key={type}>
                {index > 0 && ', '}
                <code>{type}</code>
              </span>
            ))}
            .
          </p>
          <div className="filters">
            <EnableToggle webhook={webhook.data} />
            <button type="button" className="secondary" disabled={test.isPending || !webhook.data.enabled} onClick={() => test.mutate()}>
              Send a test event
            </button>
          </div>
          <ErrorNotice error={test.error} />
        </>
      )}
      <h2>Deliveries</h2>
      <div className="filters">
        <ChoiceFilter
          label="Status"
          value={search.status ?? ''}
          onChange={(status) => void navigate({ search: { status: status || undefined } })}
          choices={DELIVERY_STATUSES}
          any="any"
        />
      </div>
      <ErrorNotice error={deliveries.error} />
      {deliveries.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !deliveries.isError ? (
        <p className="notice empty">
          {search.status
            ? `No ${search.status} deliveries.`
            : 'No deliveries yet. One is made for each event of the types above; send a test event to try the URL now.'}
        </p>
      ) : (
        <>
          <Table
            columns={[
              'Event',
              'Status',
              'Attempts',
              'HTTP status',
              'Latency',
              'Error',
              'Last attempt',
              'Next retry',
              { label: 'Actions', visuallyHidden: true },
            ]}
          >
            {deliveries.data?.items.map((delivery) => (
              <DeliveryRow
                key={delivery.id}
                webhookId={webhookId}
                delivery={delivery}
                enabled={webhook.data?.enabled ?? false}
                now={deliveries.dataUpdatedAt}
              />
            ))}
          </Table>
          <Pager span={span} total={total} noun="deliveries" onPage={(page) => void navigate({ search: { ...search, page } })} />
        </>
      )}
    </section>
  );
}

function DeliveryRow({ webhookId, delivery, enabled, now }: { webhookId: string; delivery: Delivery; enabled: boolean; now: number }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const retry = useMutation({
    mutationFn: () => client.webhooks.retry({ path: { id: webhookId, delivery_id: delivery.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.webhooks.deliveries(webhookId) }),
  });
  const inFlight = delivery.status === 'pending' && delivery.attempts > 0 && delivery.latency_ms === null;
  return (
    <tr data-delivery={delivery.id}>
      <th scope="row">
        <code>{delivery.event_type}</code>
        <div className="muted">
          <code>{delivery.event_id}</code>
        </div>
      </th>
      <td>
        <span className={`badge ${STATUS_BADGE[delivery.status]}`}>{inFlight ? 'sending' : delivery.status}</span>
      </td>
      <td>
        {delivery.attempts}
        {delivery.attempts > 1 && <DeliveryAttempts webhookId={webhookId} deliveryId={delivery.id} attempts={delivery.attempts} />}
      </td>
      <td>{delivery.last_status_code ?? <span className="muted">—</span>}</td>
      <td>{delivery.latency_ms === null ? <span className="muted">—</span> : `${delivery.latency_ms} ms`}</td>
      <td className="delivery-error">
        {delivery.error ?? <span className="muted">—</span>}
        {delivery.response_body && (
          <details>
            <summary>Response body</summary>
            <pre>{delivery.response_body}</pre>
          </details>
        )}
      </td>
      <td>
        <time dateTime={delivery.last_attempt_at ?? undefined} title={delivery.last_attempt_at ?? undefined}>
          {relativeTime(delivery.last_attempt_at, now)}
        </time>
      </td>
      <td>
        {delivery.next_attempt_at && !inFlight ? (
          <time dateTime={delivery.next_attempt_at} title={delivery.next_attempt_at}>
            {relativeTime(delivery.next_attempt_at, now)}
          </time>
        ) : (
          <span className="muted">—</span>
        )}
      </td>
      <td className="actions">
        {delivery.status !== 'delivered' && enabled && !inFlight && (
          <button type="button" className="secondary" disabled={retry.isPending} onClick={() => retry.mutate()}>
            Retry now
          </button>
        )}
        <ErrorNotice error={retry.error} />
      </td>
    </tr>
  );
}

/** Every attempt of a retried delivery, loaded when opened: a 503 retried into a 200 shows both. */
function DeliveryAttempts({ webhookId, deliveryId, attempts }: { webhookId: string; deliveryId: string; attempts: number }) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const log = useQuery({
    queryKey: queryKeys.webhooks.attempts(deliveryId, attempts),
    queryFn: () => client.webhooks.attempts.page({ path: { id: webhookId, delivery_id: deliveryId }, query: { limit: 100 } }),
    enabled: open,
  });
  return (
    <details className="delivery-attempts" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>All attempts</summary>
      <ErrorNotice error={log.error} />
      {log.data && (
        <ol>
          {log.data.items.map((attempt) => (
            <li key={attempt.attempt} data-attempt={attempt.attempt}>
              <time dateTime={attempt.started_at} title={attempt.started_at}>
                {new Date(attempt.started_at).toLocaleTimeString()}
              </time>{' '}
              {attempt.status_code ?? 'no answer'}
              {attempt.latency_ms !== null && ` in ${attempt.latency_ms} ms`}
              {attempt.error && ` — ${attempt.error}`}
            </li>
          ))}
        </ol>
      )}
    </details>
  );
}
