import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent, type ReactNode } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { CopyField } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow, withMember } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';

export interface KeysSearch {
  page?: number;
  /** Also list revoked keys. */
  revoked?: boolean;
}

type Permission = Result<'auth.whoami'>['permissions'][number];

const PAGE_SIZE = 25;
const KEY_EVENTS = ['key.*'];
const DAY_MS = 86_400_000;
/** The lifetimes a person picks for their own key; 0: no expiry. */
const LIFETIMES = [
  { days: 30, label: '30 days' },
  { days: 90, label: '90 days' },
  { days: 365, label: 'a year' },
  { days: 0, label: 'never' },
] as const;

/** Settings → API keys (keys:admin): every key; create one for an agent or an admin (shown once), revoke. */
export function ApiKeysView({ search }: { search: KeysSearch }) {
  const navigate = useNavigate({ from: '/settings/keys' });
  return (
    <KeysPage
      title="API keys"
      search={search}
      onSearch={(next) => void navigate({ search: next })}
      form={(onCreated) => <AdminKeyForm onCreated={onCreated} />}
    />
  );
}

/** Settings → Your keys (a signed-in person): keys that act as them, narrowed by scopes and expiring; create, revoke. */
export function OwnKeysView({ search }: { search: KeysSearch }) {
  const { whoami } = useSession();
  const navigate = useNavigate({ from: '/settings/my-keys' });
  return (
    <KeysPage
      title="Your keys"
      userId={whoami.id}
      search={search}
      onSearch={(next) => void navigate({ search: next })}
      form={(onCreated) => <OwnKeyForm onCreated={onCreated} />}
    />
  );
}

interface KeysPageProps {
  title: string;
  /** Only this user's keys. */
  userId?: string;
  search: KeysSearch;
  onSearch(search: KeysSearch): void;
  form(onCreated: (key: Result<'auth.createKey'>) => void): ReactNode;
}

function KeysPage({ title, userId, search, onSearch, form }: KeysPageProps) {
  const { client, whoami } = useSession();
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<Result<'auth.createKey'> | null>(null);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: queryKeys.keys.all, events: KEY_EVENTS });
  const keys = useQuery({
    queryKey: queryKeys.keys.list({ offset, revoked: search.revoked ?? false, userId }),
    queryFn: () =>
      client.auth.listKeys.page({
        query: { limit: PAGE_SIZE, offset, include_revoked: search.revoked ?? false, ...(userId ? { user_id: userId } : {}) },
      }),
    placeholderData: keepPreviousData,
  });

  const total = keys.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>{title}</h1>
      {form((key) => {
        setCreated(key);
        void queryClient.invalidateQueries({ queryKey: queryKeys.keys.all });
      })}
      {created && <CreatedKey created={created} onDone={() => setCreated(null)} />}
      <label className="toggle">
        <input
          type="checkbox"
          checked={search.revoked ?? false}
          onChange={(event) => onSearch({ revoked: event.target.checked || undefined })}
        />
        Show revoked keys
      </label>
      <ErrorNotice error={keys.error} />
      {keys.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !keys.isError ? (
        <p className="notice empty">No API keys to show. Create one above.</p>
      ) : (
        <>
          <Table columns={['Name', 'Role', 'Acts as', 'Scopes', 'Expires', 'Key', 'Created', { label: 'Actions', visuallyHidden: true }]}>
            {keys.data?.items.map((key) => (
              <KeyRow key={key.id} apiKey={key} current={key.id === whoami.key_id} />
            ))}
          </Table>
          <Pager span={span} total={total} noun="keys" onPage={(page) => onSearch({ ...search, page })} />
        </>
      )}
    </section>
  );
}

const dateOf = (at: string) => <time dateTime={at}>{new Date(at).toLocaleString()}</time>;

function KeyRow({ apiKey, current }: { apiKey: Item<'auth.listKeys'>; current: boolean }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => client.auth.revokeKey({ path: { key_id: apiKey.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.keys.all }),
  });
  const actsAs = apiKey.agent_id ? (
    <code>agent {apiKey.agent_id}</code>
  ) : apiKey.user_id ? (
    <code>{apiKey.user_id}</code>
  ) : (
    <span className="muted">—</span>
  );
  return (
    <tr data-key={apiKey.id}>
      <th scope="row">{apiKey.name ?? <span className="muted">unnamed</span>}</th>
      <td>{apiKey.role}</td>
      <td>{actsAs}</td>
      <td>{apiKey.scopes ? apiKey.scopes.join(', ') : <span className="muted">the whole role</span>}</td>
      <td>{apiKey.expires_at ? dateOf(apiKey.expires_at) : <span className="muted">never</span>}</td>
      <td>
        <code>{apiKey.prefix}…</code>
      </td>
      <td>{dateOf(apiKey.created_at)}</td>
      <td className="actions">
        {apiKey.revoked_at ? (
          <span className="badge health-unhealthy">revoked</span>
        ) : current ? (
          <span className="muted">this session</span>
        ) : (
          <ConfirmButton
            label="Revoke"
            confirm="Confirm revoke"
            pending={revoke.isPending}
            error={revoke.error}
            onConfirm={() => revoke.mutate()}
          />
        )}
      </td>
    </tr>
  );
}

/** The create mutation of a key form: its fields reset by `onReset` once the key is made. */
function useCreateKey(onCreated: (key: Result<'auth.createKey'>) => void, onReset: () => void) {
  const { client } = useSession();
  return useMutation({
    mutationFn: (body: Body<'auth.createKey'>) => client.auth.createKey({ body }),
    onSuccess: (key) => {
      onReset();
      onCreated(key);
    },
  });
}

function KeyForm({ pending, error, onSubmit, children }: { pending: boolean; error: unknown; onSubmit(): void; children: ReactNode }) {
  const id = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit();
  };
  return (
    <form className="card create-key" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a key</h2>
      <div className="fields">{children}</div>
      <button type="submit" disabled={pending}>
        Create key
      </button>
      <ErrorNotice error={error} />
    </form>
  );
}

function AdminKeyForm({ onCreated }: { onCreated(key: Result<'auth.createKey'>): void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<'agent' | 'admin'>('agent');
  const [agentId, setAgentId] = useState('');
  const create = useCreateKey(onCreated, () => {
    setName('');
    setAgentId('');
  });
  const submit = () =>
    create.mutate({
      role,
      ...(name.trim() ? { name: name.trim() } : {}),
      ...(role === 'agent' && agentId.trim() ? { agent_id: agentId.trim() } : {}),
    });
  return (
    <KeyForm pending={create.isPending} error={create.error} onSubmit={submit}>
      <label>
        Name
        <input value={name} onChange={(event) => setName(event.target.value)} placeholder="summarizer worker" />
      </label>
      <label>
        Role
        <select value={role} onChange={(event) => setRole(event.target.value as 'agent' | 'admin')}>
          <option value="agent">agent</option>
          <option value="admin">admin</option>
        </select>
      </label>
      {role === 'agent' && (
        <label>
          Agent id
          <input value={agentId} onChange={(event) => setAgentId(event.target.value)} placeholder="summarizer" required />
        </label>
      )}
    </KeyForm>
  );
}

/** A key that acts as the signed-in person: their role, narrowed to the permissions ticked (none ticked: the whole role). */
function OwnKeyForm({ onCreated }: { onCreated(key: Result<'auth.createKey'>): void }) {
  const { whoami } = useSession();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<ReadonlySet<Permission>>(new Set());
  const [days, setDays] = useState<number>(LIFETIMES[0].days);
  const create = useCreateKey(onCreated, () => {
    setName('');
    setScopes(new Set());
  });
  const submit = () =>
    create.mutate({
      user_id: whoami.id,
      ...(name.trim() ? { name: name.trim() } : {}),
      ...(scopes.size > 0 ? { scopes: [...scopes] } : {}),
      ...(days > 0 ? { expires_at: new Date(Date.now() + days * DAY_MS).toISOString() } : {}),
    });
  const toggle = (permission: Permission, on: boolean) => setScopes((current) => withMember(current, permission, on));
  return (
    <KeyForm pending={create.isPending} error={create.error} onSubmit={submit}>
      <label>
        Name
        <input value={name} onChange={(event) => setName(event.target.value)} placeholder="my laptop" />
      </label>
      <label>
        Expires after
        <select value={days} onChange={(event) => setDays(Number(event.target.value))}>
          {LIFETIMES.map((lifetime) => (
            <option key={lifetime.days} value={lifetime.days}>
              {lifetime.label}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="scopes">
        <legend>Scopes (none ticked: everything your role allows)</legend>
        {whoami.permissions.map((permission) => (
          <label key={permission} className="toggle">
            <input type="checkbox" checked={scopes.has(permission)} onChange={(event) => toggle(permission, event.target.checked)} />
            <code>{permission}</code>
          </label>
        ))}
      </fieldset>
    </KeyForm>
  );
}

/** The plain key, shown once: the server keeps only its hash. */
function CreatedKey({ created, onDone }: { created: Result<'auth.createKey'>; onDone(): void }) {
  return (
    <div className="notice success" role="status">
      <p>
        <strong>Key created. Copy it now: it is not shown again.</strong>
      </p>
      <CopyField value={created.key} label="New API key" testId="created-key">
        <button type="button" onClick={onDone}>
          Done
        </button>
      </CopyField>
    </div>
  );
}
