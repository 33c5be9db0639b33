import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { CopyField } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow } from '../format.js';
import { useLiveRefresh } from '../live.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';

export interface KeysSearch {
  page?: number;
  /** Also list revoked keys. */
  revoked?: boolean;
}

const PAGE_SIZE = 25;
const KEY_EVENTS = ['key.*'];

/** Settings → API keys (admin; SettingsLayout turns others away): list, create (the key is shown once), revoke. */
export function ApiKeysView({ search }: { search: KeysSearch }) {
  const { client, whoami } = useSession();
  const navigate = useNavigate({ from: '/settings/keys' });
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<Result<'auth.createKey'> | null>(null);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  useLiveRefresh({ queryKey: ['keys'], events: KEY_EVENTS });
  const keys = useQuery({
    queryKey: ['keys', { offset, revoked: search.revoked ?? false }],
    queryFn: () => client.auth.listKeys.page({ query: { limit: PAGE_SIZE, offset, include_revoked: search.revoked ?? false } }),
    placeholderData: keepPreviousData,
  });

  const total = keys.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>API keys</h1>
      <CreateKeyForm
        onCreated={(key) => {
          setCreated(key);
          void queryClient.invalidateQueries({ queryKey: ['keys'] });
        }}
      />
      {created && <CreatedKey created={created} onDone={() => setCreated(null)} />}
      <label className="toggle">
        <input type="checkbox" checked={search.revoked ?? false} onChange={(event) => void navigate({ search: { revoked: event.target.checked || undefined } })} />
        Show revoked keys
      </label>
      <ErrorNotice error={keys.error} />
      {keys.isPending ? (
        <p className="muted">Loading…</p>
      ) : total === 0 && !keys.isError ? (
        <p className="notice empty">No API keys to show. Create one above for each agent.</p>
      ) : (
        <>
          <Table columns={['Name', 'Role', 'Agent', 'Key', 'Created', { label: 'Actions', visuallyHidden: true }]}>
            {keys.data?.items.map((key) => <KeyRow key={key.id} apiKey={key} current={key.id === whoami.key_id} />)}
          </Table>
          <Pager span={span} total={total} noun="keys" onPage={(page) => void navigate({ search: { ...search, page } })} />
        </>
      )}
    </section>
  );
}

function KeyRow({ apiKey, current }: { apiKey: Item<'auth.listKeys'>; current: boolean }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const revoke = useMutation({
    mutationFn: () => client.auth.revokeKey({ path: { key_id: apiKey.id } }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['keys'] }),
  });
  return (
    <tr data-key={apiKey.id}>
      <th scope="row">{apiKey.name ?? <span className="muted">unnamed</span>}</th>
      <td>{apiKey.role}</td>
      <td>{apiKey.agent_id ? <code>{apiKey.agent_id}</code> : <span className="muted">—</span>}</td>
      <td>
        <code>{apiKey.prefix}…</code>
      </td>
      <td>
        <time dateTime={apiKey.created_at}>{new Date(apiKey.created_at).toLocaleString()}</time>
      </td>
      <td className="actions">
        {apiKey.revoked_at ? (
          <span className="badge health-unhealthy">revoked</span>
        ) : current ? (
          <span className="muted">this session</span>
        ) : (
          <ConfirmButton label="Revoke" confirm="Confirm revoke" pending={revoke.isPending} error={revoke.error} onConfirm={() => revoke.mutate()} />
        )}
      </td>
    </tr>
  );
}

function CreateKeyForm({ onCreated }: { onCreated(key: Result<'auth.createKey'>): void }) {
  const { client } = useSession();
  const id = useId();
  const [name, setName] = useState('');
  const [role, setRole] = useState<'agent' | 'admin'>('agent');
  const [agentId, setAgentId] = useState('');
  const create = useMutation({
    mutationFn: (body: Body<'auth.createKey'>) => client.auth.createKey({ body }),
    onSuccess: (key) => {
      setName('');
      setAgentId('');
      onCreated(key);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({ role, ...(name.trim() ? { name: name.trim() } : {}), ...(role === 'agent' && agentId.trim() ? { agent_id: agentId.trim() } : {}) });
  };
  return (
    <form className="card create-key" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a key</h2>
      <div className="fields">
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
      </div>
      <button type="submit" disabled={create.isPending}>
        Create key
      </button>
      <ErrorNotice error={create.error} />
    </form>
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
