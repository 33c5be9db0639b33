import { useId, useState, type FormEvent } from 'react';
import type { Body } from '../../src/client/browser.js';
import { ErrorNotice } from './errors.js';

interface SignInProps {
  /** The OIDC provider's name when the server offers OIDC sign-in. */
  provider: string | null;
  /** Why the last sign-in was refused, or why the session ended, if so. */
  error: unknown;
  pending: boolean;
  onSignIn(body: Body<'auth.signIn'>): void;
}

/** Why an OIDC sign-in was refused: the callback returns here with it (once: it leaves the URL). */
function takeOidcError(): string | null {
  const url = new URL(window.location.href);
  const message = url.searchParams.get('sign_in_error');
  if (message === null) return null;
  url.searchParams.delete('sign_in_error');
  window.history.replaceState(window.history.state, '', url);
  return message;
}

/**
 * The sign-in page: a person's username and password, their OIDC provider's sign-in, or an API
 * key exchanged for a session (the key goes to the server once and is kept nowhere in the
 * browser). The provider's sign-in comes back to the page the person was on.
 */
export function SignIn({ provider, error, pending, onSignIn }: SignInProps) {
  const [withKey, setWithKey] = useState(false);
  const [oidcError] = useState(takeOidcError);
  const returnTo = window.location.pathname + window.location.search;
  return (
    <main className="sign-in">
      <h1>Sign in to Switchboard</h1>
      {withKey ? <KeyForm pending={pending} onSignIn={onSignIn} /> : <PasswordForm pending={pending} onSignIn={onSignIn} />}
      <ErrorNotice error={error ?? (oidcError === null ? null : new Error(oidcError))} />
      <p className="alternatives">
        {provider !== null && (
          <a className="button secondary" href={`/api/v1/auth/oidc/start?${new URLSearchParams({ return_to: returnTo })}`}>
            Sign in with {provider}
          </a>
        )}
        <button type="button" className="link" onClick={() => setWithKey(!withKey)}>
          {withKey ? 'Use a username and password' : 'Use an API key'}
        </button>
      </p>
    </main>
  );
}

function PasswordForm({ pending, onSignIn }: Pick<SignInProps, 'pending' | 'onSignIn'>) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const id = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSignIn({ username: username.trim(), password });
  };
  return (
    <form onSubmit={submit} className="card">
      <label htmlFor={`${id}-username`}>Username</label>
      <input
        id={`${id}-username`}
        autoComplete="username"
        autoCapitalize="none"
        spellCheck={false}
        value={username}
        onChange={(event) => setUsername(event.target.value)}
        required
        autoFocus
      />
      <label htmlFor={`${id}-password`}>Password</label>
      <input
        id={`${id}-password`}
        type="password"
        autoComplete="current-password"
        value={password}
        onChange={(event) => setPassword(event.target.value)}
        required
      />
      <button type="submit" disabled={pending}>
        {pending ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}

function KeyForm({ pending, onSignIn }: Pick<SignInProps, 'pending' | 'onSignIn'>) {
  const [apiKey, setApiKey] = useState('');
  const id = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (apiKey.trim() !== '') onSignIn({ api_key: apiKey.trim() });
  };
  return (
    <form onSubmit={submit} className="card">
      <label htmlFor={id}>API key</label>
      <input
        id={id}
        type="password"
        autoComplete="off"
        spellCheck={false}
        placeholder="sk_…"
        value={apiKey}
        onChange={(event) => setApiKey(event.target.value)}
        required
        autoFocus
      />
      <p className="muted">
        The key is exchanged for a session once and not kept in the browser. The admin key is printed on the server's first start and kept
        in <code>data/admin.key</code>.
      </p>
      <button type="submit" disabled={pending}>
        {pending ? 'Signing in…' : 'Sign in with the key'}
      </button>
    </form>
  );
}
