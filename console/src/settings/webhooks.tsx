import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { SigningSecretNotice } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { ListBody } from '../list-body.js';
import { pageWindow, relativeTime } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';
import './webhooks.css';

export interface WebhooksSearch {
  page?: number;
}

type Webhook = Item<'webhooks.list'>;

const PAGE_SIZE = 25;
/** Webhooks append only webhook.disabled (after 24 h of failures); the console's own changes refresh on success. */
export const WEBHOOK_EVENTS = ['webhook.*'];

/** Settings → Webhooks (admin): list, create (the secret is shown once), enable/disable, delete. */
export function WebhooksView({ search }: { search: WebhooksSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/settings/webhooks' });
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<Result<'webhooks.create'> | null>(null);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.webhooks.all, events: WEBHOOK_EVENTS });
  const webhooks = useQuery({
    queryKey: queryKeys.webhooks.list({ offset }),
    queryFn: () => client.webhooks.list.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = webhooks.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>Webhooks</h1>
      <CreateWebhookForm
        onCreated={(webhook) => {
          setCreated(webhook);
          void queryClient.invalidateQueries({ queryKey: queryKeys.webhooks.all });
        }}
      />
      {created && (
        <SigningSecretNotice
          created="Webhook"
          signs={
            <>
              delivery's signature with it (Standard Webhooks; the SDK's <code>verifyWebhook</code>).
            </>
          }
          secret={created.secret}
          testId="webhook-secret"
          onDone={() => setCreated(null)}
        />
      )}
      <ListBody
        query={webhooks}
        total={total}
        empty="No webhooks yet. Create one above to have Switchboard POST events (a run completed, a message dead-lettered…) to your own URL."
      >
        <Table columns={['URL', 'Event types', 'State', 'Created', { label: 'Actions', visuallyHidden: true }]}>
          {webhooks.data?.items.map((webhook) => (
            <WebhookRow key={webhook.id} webhook={webhook} now={webhooks.dataUpdatedAt} />
          ))}
        </Table>
        <Pager span={span} total={total} noun="webhooks" onPage={(page) => void navigate({ search: { page } })} />
      </ListBody>
    </section>
  );
}

function WebhookRow({ webhook, now }: { webhook: Webhook; now: number }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const remove = useMutation({
    mutationFn: () => client.webhooks.delete({ path: { id: webhook.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.webhooks.all }),
  });
  return (
    <tr data-webhook={webhook.id}>
      <th scope="row">
        <Link to="/settings/webhooks/$webhookId" params={{ webhookId: webhook.id }} className="webhook-url">
          {webhook.url}
        </Link>
        {webhook.description && <div className="muted">{webhook.description}</div>}
      </th>
      <td>
        <ul className="chips">
          {webhook.types.map((type) => (
            <li key={type}>{type}</li>
          ))}
        </ul>
      </td>
      <td>
        <WebhookState webhook={webhook} now={now} />
      </td>
      <td>
        <time dateTime={webhook.created_at} title={webhook.created_at}>
          {relativeTime(webhook.created_at, now)}
        </time>
      </td>
      <td className="actions">
        <Link to="/settings/webhooks/$webhookId" params={{ webhookId: webhook.id }}>
          Deliveries
        </Link>
        <EnableToggle webhook={webhook} />
        <ConfirmButton
          label="Delete"
          confirm="Confirm delete"
          pending={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate()}
        />
      </td>
    </tr>
  );
}

/** Enabled, failing since when, or disabled and why. */
export function WebhookState({ webhook, now }: { webhook: Webhook; now: number }) {
  if (!webhook.enabled) {
    return (
      <>
        <span className="badge health-unhealthy">disabled</span>
        {webhook.disabled_reason && <div className="muted">{webhook.disabled_reason}</div>}
      </>
    );
  }
  if (webhook.failing_since) {
    return (
      <>
        <span className="badge health-degraded">failing</span>
        <div className="muted">since {relativeTime(webhook.failing_since, now)}</div>
      </>
    );
  }
  return <span className="badge health-healthy">enabled</span>;
}

/** Disable (deliveries stop) or enable again (from the events that happen next). */
export function EnableToggle({ webhook }: { webhook: Webhook }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const toggle = useMutation({
    mutationFn: () => client.webhooks.update({ path: { id: webhook.id }, body: { enabled: !webhook.enabled } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.webhooks.all }),
  });
  return (
    <>
      <button type="button" className="secondary" disabled={toggle.isPending} onClick={() => toggle.mutate()}>
        {webhook.enabled ? 'Disable' : 'Enable'}
      </button>
      <ErrorNotice error={toggle.error} />
    </>
  );
}

/** Event type patterns as typed: separated by commas or spaces. */
function typesOf(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))];
}

function CreateWebhookForm({ onCreated }: { onCreated(webhook: Result<'webhooks.create'>): void }) {
  const { client } = useSession();
  const id = useId();
  const [url, setUrl] = useState('');
  const [types, setTypes] = useState('');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: (body: Body<'webhooks.create'>) => client.webhooks.create({ body }),
    onSuccess: (webhook) => {
      setUrl('');
      setTypes('');
      setDescription('');
      onCreated(webhook);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ url: url.trim(), types: typesOf(types), ...(description.trim() ? { description: description.trim() } : {}) });
  };
  return (
    <form className="card create-webhook" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a webhook</h2>
      <div className="fields">
        <label className="wide">
          URL
          <input
            type="url"
            value={url}
            onChange={(event) => setUrl(event.target.value)}
            placeholder="https://example.com/switchboard"
            required
          />
        </label>
        <label className="wide">
          Event types
          <input
            value={types}
            onChange={(event) => setTypes(event.target.value)}
            placeholder="run.completed, run.failed, task.>"
            required
            aria-describedby={`${id}-types`}
          />
        </label>
        <label className="wide">
          Description
          <input value={description} onChange={(event) => setDescription(event.target.value)} placeholder="What it is for" />
        </label>
      </div>
      <p className="muted" id={`${id}-types`}>
        Exact types or patterns, separated by commas: <code>run.*</code> matches one more segment, <code>run.&gt;</code> any depth.
      </p>
      <button type="submit" disabled={create.isPending}>
        Create webhook
      </button>
      <ErrorNotice error={create.error} />
    </form>
  );
}
