import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useId, useState, type FormEvent } from 'react';
import type { Body, Item, Result } from '../../../src/client/browser.js';
import { ConfirmButton } from '../confirm-button.js';
import { CopyField } from '../copy-field.js';
import { ErrorNotice } from '../errors.js';
import { pageWindow } from '../format.js';
import { Pager } from '../pager.js';
import { useSession } from '../session.js';
import { Table } from '../table.js';
import { queryKeys } from '../query-keys.js';

export interface UsersSearch {
  page?: number;
}

type User = Item<'auth.listUsers'>;
type UserRole = Body<'auth.createUser'>['role'];

const PAGE_SIZE = 25;
const USER_ROLES: readonly UserRole[] = ['viewer', 'approver', 'operator', 'admin'];

/**
 * A one-time password for a new user: 18 random bytes as base64url (24 characters), made in
 * the browser and shown once; the server keeps only its scrypt hash.
 */
function oneTimePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(18));
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_');
}

/** Settings → Users (users:admin): people with their role; create (the password shown once), change role, disable. */
export function UsersView({ search }: { search: UsersSearch }) {
  const { client } = useSession();
  const navigate = useNavigate({ from: '/settings/users' });
  const queryClient = useQueryClient();
  const [created, setCreated] = useState<{ user: Result<'auth.createUser'>; password: string } | null>(null);
  const offset = ((search.page ?? 1) - 1) * PAGE_SIZE;
  const users = useQuery({
    queryKey: queryKeys.users.list({ offset }),
    queryFn: () => client.auth.listUsers.page({ query: { limit: PAGE_SIZE, offset } }),
    placeholderData: keepPreviousData,
  });
  const total = users.data?.total ?? 0;
  const span = pageWindow(search.page ?? 1, PAGE_SIZE, total);
  return (
    <section>
      <h1>Users</h1>
      <CreateUserForm
        onCreated={(user, password) => {
          setCreated({ user, password });
          void queryClient.invalidateQueries({ queryKey: queryKeys.users.all });
        }}
      />
      {created && (
        <div className="notice success" role="status">
          <p>
            <strong>User {created.user.username} created. Hand them this password now: it is not shown again.</strong>
          </p>
          <CopyField value={created.password} label="One-time password" testId="one-time-password">
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </CopyField>
        </div>
      )}
      <ErrorNotice error={users.error} />
      {users.isPending ? (
        <p className="muted">Loading…</p>
      ) : (
        <>
          <Table columns={['Username', 'Name', 'Role', 'State', { label: 'Actions', visuallyHidden: true }]}>
            {users.data?.items.map((user) => (
              <UserRow key={user.id} user={user} />
            ))}
          </Table>
          <Pager span={span} total={total} noun="users" onPage={(page) => void navigate({ search: { page } })} />
        </>
      )}
    </section>
  );
}

function UserRow({ user }: { user: User }) {
  const { client, whoami } = useSession();
  const queryClient = useQueryClient();
  const update = useMutation({
    mutationFn: (body: Body<'auth.updateUser'>) => client.auth.updateUser({ path: { user_id: user.id }, body }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.users.all }),
  });
  // Disabling or demoting oneself would end this session: the console leaves that to another admin.
  const self = user.id === whoami.id;
  return (
    <tr data-user={user.username}>
      <th scope="row">
        <code>{user.username}</code>
      </th>
      <td>{user.display_name ?? <span className="muted">—</span>}</td>
      <td>
        <select
          aria-label={`Role of ${user.username}`}
          value={user.role}
          disabled={self || update.isPending}
          onChange={(event) => update.mutate({ role: event.target.value as UserRole })}
        >
          {USER_ROLES.map((role) => (
            <option key={role} value={role}>
              {role}
            </option>
          ))}
        </select>
      </td>
      <td>
        {user.disabled ? <span className="badge health-unhealthy">disabled</span> : <span className="badge health-healthy">active</span>}
      </td>
      <td className="actions">
        {self ? (
          <span className="muted">you</span>
        ) : user.disabled ? (
          <button type="button" className="secondary" disabled={update.isPending} onClick={() => update.mutate({ disabled: false })}>
            Enable
          </button>
        ) : (
          <ConfirmButton
            label="Disable"
            confirm="Confirm disable"
            pending={update.isPending}
            error={null}
            onConfirm={() => update.mutate({ disabled: true })}
          />
        )}
        <ErrorNotice error={update.error} />
      </td>
    </tr>
  );
}

function CreateUserForm({ onCreated }: { onCreated(user: Result<'auth.createUser'>, password: string): void }) {
  const { client } = useSession();
  const id = useId();
  const [username, setUsername] = useState('');
  const [displayName, setDisplayName] = useState('');
  const [role, setRole] = useState<UserRole>('viewer');
  const create = useMutation({
    mutationFn: async (body: Body<'auth.createUser'> & { password: string }) => ({
      user: await client.auth.createUser({ body }),
      password: body.password,
    }),
    onSuccess: ({ user, password }) => {
      setUsername('');
      setDisplayName('');
      onCreated(user, password);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate({
      username: username.trim(),
      role,
      password: oneTimePassword(),
      ...(displayName.trim() ? { display_name: displayName.trim() } : {}),
    });
  };
  return (
    <form className="card create-key" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>Create a user</h2>
      <div className="fields">
        <label>
          Username
          <input
            value={username}
            onChange={(event) => setUsername(event.target.value)}
            placeholder="ada"
            autoCapitalize="none"
            spellCheck={false}
            required
          />
        </label>
        <label>
          Display name
          <input value={displayName} onChange={(event) => setDisplayName(event.target.value)} placeholder="Ada Lovelace" />
        </label>
        <label>
          Role
          <select value={role} onChange={(event) => setRole(event.target.value as UserRole)}>
            {USER_ROLES.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
          </select>
        </label>
      </div>
      <button type="submit" disabled={create.isPending}>
        Create user
      </button>
      <ErrorNotice error={create.error} />
    </form>
  );
}
