import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { Switchboard, SwitchboardError, type Result } from '../../src/client/browser.js';
import { LiveEvents, useLiveRefresh } from './live.js';
import { SignIn } from './sign-in.js';

/** Where the key is kept: sessionStorage, so it ends with the tab (design §9). */
const STORAGE_KEY = 'switchboard.console.apiKey';

export interface Session {
  /** The SDK, sending the key with every call: every rule of the API holds in the console too. */
  client: Switchboard;
  whoami: Result<'auth.whoami'>;
  signOut(): void;
}

const SessionContext = createContext<Session | null>(null);

/** The signed-in session; only inside SessionGate. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionGate');
  return session;
}

const clientFor = (apiKey: string) => new Switchboard({ url: window.location.origin, apiKey });

/**
 * Shows the sign-in form until the server accepts an API key (GET /auth/whoami), then its
 * children with the session. A deep link keeps its URL through the sign-in; a key kept from
 * earlier in the tab is checked again, and forgotten when refused (revoked since).
 */
export function SessionGate({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const [apiKey, setApiKey] = useState(() => sessionStorage.getItem(STORAGE_KEY));
  const client = useMemo(() => (apiKey === null ? null : clientFor(apiKey)), [apiKey]);
  const whoami = useQuery({
    queryKey: ['whoami', apiKey],
    queryFn: () => client!.auth.whoami(),
    enabled: client !== null,
    staleTime: Infinity,
  });
  const refused = whoami.isError;
  useEffect(() => {
    if (refused) sessionStorage.removeItem(STORAGE_KEY);
  }, [refused]);

  const signIn = useMutation({
    mutationFn: async (key: string) => ({ key, whoami: await clientFor(key).auth.whoami() }),
    onSuccess: ({ key, whoami }) => {
      queryClient.setQueryData(['whoami', key], whoami);
      sessionStorage.setItem(STORAGE_KEY, key);
      setApiKey(key);
    },
  });
  const { reset } = signIn;
  const signOut = useCallback(() => {
    sessionStorage.removeItem(STORAGE_KEY);
    setApiKey(null);
    reset();
    queryClient.clear();
  }, [queryClient, reset]);

  // A key revoked while in use: the first query or event stream that gets a 401 ends the session, and the form says why.
  const [ended, setEnded] = useState<SwitchboardError | null>(null);
  const end = useCallback(
    (error: SwitchboardError) => {
      setEnded(error);
      signOut();
    },
    [signOut],
  );
  useEffect(
    () =>
      queryClient.getQueryCache().subscribe((event) => {
        const error = event.query.state.error;
        if (event.type === 'updated' && error instanceof SwitchboardError && error.status === 401) end(error);
      }),
    [queryClient, end],
  );
  const start = (key: string) => {
    setEnded(null);
    signIn.mutate(key);
  };

  const session = useMemo(() => (client && whoami.data ? { client, whoami: whoami.data, signOut } : null), [client, whoami.data, signOut]);

  if (session) {
    return (
      <SessionContext.Provider value={session}>
        <LiveEvents key={apiKey} client={session.client} onRefused={end}>
          <RevocationWatch />
          {children}
        </LiveEvents>
      </SessionContext.Provider>
    );
  }
  if (client && whoami.isPending) return <p className="splash">Signing in…</p>;
  return <SignIn error={signIn.error ?? whoami.error ?? ended} pending={signIn.isPending} onSignIn={start} />;
}

/**
 * A key revoked while the console uses it (`key.revoked`, which an admin's stream carries): asking
 * whoami again gets the 401 that ends the session at once, not at the next refetch of a view.
 */
function RevocationWatch() {
  useLiveRefresh({ queryKey: ['whoami'], events: ['key.revoked'] });
  return null;
}
