import { useId, useState, type FormEvent } from 'react';
import { ErrorNotice } from './errors.js';

interface SignInProps {
  /** Why the last key was refused, if it was. */
  error: unknown;
  pending: boolean;
  onSignIn(apiKey: string): void;
}

export function SignIn({ error, pending, onSignIn }: SignInProps) {
  const [apiKey, setApiKey] = useState('');
  const inputId = useId();

  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (apiKey.trim() !== '') onSignIn(apiKey.trim());
  };

  return (
    <main className="sign-in">
      <h1>Switchboard</h1>
      <form onSubmit={submit} className="card">
        <label htmlFor={inputId}>API key</label>
        <input
          id={inputId}
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
          The admin key is printed on the server's first start and kept in <code>data/admin.key</code>. The console keeps the key
          in this tab only.
        </p>
        <button type="submit" disabled={pending}>
          {pending ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorNotice error={error} />
      </form>
    </main>
  );
}
