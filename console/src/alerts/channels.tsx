import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { SigningSecretNotice } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { relativeTime } from '../format.js';
import { ListBody } from '../list-body.js';
import { queryKeys } from '../query-keys.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import './alerts.css';

type Channel = Item<'notifications.listChannels'>;
type ChannelType = Channel['type'];

/** Channels listed at most: a team has a few, rules name them by id. */
export const CHANNELS_SHOWN = 100;

/** Each channel type's one field: what it is called and how it becomes the config. */
const TYPES: Record<
  ChannelType,
  { label: string; field: string; placeholder: string; config(value: string): Body<'notifications.createChannel'>['config'] }
> = {
  webhook: { label: 'Webhook', field: 'URL', placeholder: 'https://example.com/alerts', config: (url) => ({ url }) },
  slack: {
    label: 'Slack',
    field: 'Incoming-webhook URL',
    placeholder: 'https://hooks.slack.com/services/…',
    config: (webhook_url) => ({ webhook_url }),
  },
  email: {
    label: 'Email',
    field: 'Recipients',
    placeholder: 'oncall@example.com, ops@example.com',
    config: (to) => ({ to: [...new Set(to.split(/[\s,;]+/).filter(Boolean))] }),
  },
  agent: { label: 'Agent', field: 'Agent id', placeholder: 'triage-agent', config: (agent_id) => ({ agent_id }) },
};

/** What a channel reaches, in a line. */
function target(channel: Channel): string {
  const config = channel.config as Record<string, unknown>;
  if (Array.isArray(config.to)) return config.to.join(', ');
  return String(config.url ?? config.webhook_url ?? config.agent_id ?? '');
}

/** The channels for the rule form's choices, and this page's list. */
export function useChannels() {
  const { client } = useSession();
  return useQuery({
    queryKey: queryKeys.notificationChannels.list({ limit: CHANNELS_SHOWN }),
    queryFn: () => client.notifications.listChannels.page({ query: { limit: CHANNELS_SHOWN } }),
  });
}

/** Settings → Notification channels (admin): list, create (a webhook's secret shown once), send a test, delete. */
export function ChannelsView() {
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<Result<'notifications.createChannel'> | null>(null);
  const channels = useChannels();
  const items = channels.data?.items ?? [];
  return (
    <section>
      <h1>Notification channels</h1>
      <CreateChannelForm
        onCreated={(channel) => {
          setCreated(channel);
          void queryClient.invalidateQueries({ queryKey: queryKeys.notificationChannels.all });
        }}
      />
      {created?.secret && (
        <SigningSecretNotice
          created="Channel"
          signs="notification's signature with it (Standard Webhooks)."
          secret={created.secret}
          testId="channel-secret"
          onDone={() => setCreated(null)}
        />
      )}
      <ListBody
        query={channels}
        total={items.length}
        empty="No channels yet. Create one above: alert rules tell their channels when an alert fires and resolves."
      >
        <Table columns={['Name', 'Type', 'Reaches', 'Created', { label: 'Actions', visuallyHidden: true }]}>
          {items.map((channel) => (
            <ChannelRow key={channel.id} channel={channel} now={channels.dataUpdatedAt} />
          ))}
        </Table>
        {(channels.data?.total ?? 0) > CHANNELS_SHOWN && <p className="muted">The first {CHANNELS_SHOWN} channels are shown.</p>}
      </ListBody>
    </section>
  );
}

function ChannelRow({ channel, now }: { channel: Channel; now: number }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const test = useMutation({ mutationFn: () => client.notifications.testChannel({ path: { id: channel.id } }) });
  const remove = useMutation({
    mutationFn: () => client.notifications.deleteChannel({ path: { id: channel.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.notificationChannels.all }),
  });
  return (
    <tr data-channel={channel.id}>
      <th scope="row">
        {channel.name}
        <div className="muted">{channel.id}</div>
      </th>
      <td>{TYPES[channel.type].label}</td>
      <td className="wrap-anywhere">{target(channel)}</td>
      <td>
        <time dateTime={channel.created_at} title={channel.created_at}>
          {relativeTime(channel.created_at, now)}
        </time>
      </td>
      <td className="actions">
        <button type="button" className="secondary" disabled={test.isPending} onClick={() => test.mutate()}>
          Send test
        </button>
        {test.isSuccess && (
          <span role="status" className="muted">
            Test sent
          </span>
        )}
        <ErrorNotice error={test.error} />
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

function CreateChannelForm({ onCreated }: { onCreated(channel: Result<'notifications.createChannel'>): void }) {
  const { client } = useSession();
  const id = useId();
  const [type, setType] = useState<ChannelType>('webhook');
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const create = useMutation({
    mutationFn: (body: Body<'notifications.createChannel'>) => client.notifications.createChannel({ body }),
    onSuccess: (channel) => {
      setName('');
      setValue('');
      onCreated(channel);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ type, name: name.trim(), config: TYPES[type].config(value.trim()) });
  };
  return (
    <form className="card alerts-form" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a channel</h2>
      <div className="fields">
        <label>
          Type
          <select value={type} onChange={(event) => setType(event.target.value as ChannelType)}>
            {Object.entries(TYPES).map(([key, { label }]) => (
              <option key={key} value={key}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label className="wide">
          Name
          <input value={name} onChange={(event) => setName(event.target.value)} placeholder="On-call" required />
        </label>
        <label className="wide">
          {TYPES[type].field}
          <input value={value} onChange={(event) => setValue(event.target.value)} placeholder={TYPES[type].placeholder} required />
        </label>
      </div>
      <button type="submit" disabled={create.isPending}>
        Create channel
      </button>
      <ErrorNotice error={create.error} />
    </form>
  );
}
