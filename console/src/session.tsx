import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { Switchboard, SwitchboardError, type Body, type Result } from '../../src/client/browser.js';
import { LiveEvents, useLiveRefresh } from './live.js';
import type { Permission } from './permission.js';
import { SignIn } from './sign-in.js';
import { queryKeys } from './query-keys.js';

type SignedIn = Result<'auth.currentSession'>;

export interface Session {
  /** The SDK, sending the session cookie and its CSRF token: every rule of the API holds in the console too. */
  client: Switchboard;
  whoami: Result<'auth.whoami'>;
  /** Whether the principal holds a permission: the console offers only what the server would allow. */
  can(permission: Permission): boolean;
  signOut(): void;
}

const SessionContext = createContext<Session | null>(null);

/** The signed-in session; only inside SessionGate. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionGate');
  return session;
}

/** Without a CSRF token: signs in and reads the current session, which hands out the token. */
const anonymous = new Switchboard({ url: window.location.origin, session: {} });

/** The session of the browser's cookie, or null when it has none (or an expired one). */
async function currentSession(): Promise<SignedIn | null> {
  try {
    return await anonymous.auth.currentSession();
  } catch (error) {
    if (error instanceof SwitchboardError && error.status === 401) return null;
    throw error;
  }
}

/**
 * Shows the sign-in page until the browser has a session (an HttpOnly cookie, which
 * no script reads; nothing in browser storage), then its children with the session. The CSRF
 * token is kept in memory only: after a reload GET /auth/sessions/current hands it out again.
 * The sign-in page takes the place of the view without changing the URL, so a deep link, or
 * the page a person was on when the session expired, is where they are once signed in.
 */
export function SessionGate({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const current = useQuery({ queryKey: queryKeys.session, queryFn: currentSession, staleTime: Infinity });
  const signedIn = current.data ?? null;
  const client = useMemo(
    () => (signedIn ? new Switchboard({ url: window.location.origin, session: { csrfToken: signedIn.csrf_token } }) : null),
    [signedIn],
  );
  const whoami = useQuery({
    queryKey: queryKeys.whoami.ofSession(signedIn?.principal.session?.id),
    queryFn: () => client!.auth.whoami(),
    enabled: client !== null,
    initialData: signedIn?.principal,
    staleTime: Infinity,
  });

  // Whether to offer "Sign in with <provider>" (OIDC, when the server has it configured).
  const provider = useQuery({
    queryKey: queryKeys.oidcProvider,
    queryFn: () => anonymous.auth.oidcProvider(),
    staleTime: Infinity,
    enabled: current.data === null,
  });
  const [ended, setEnded] = useState<SwitchboardError | null>(null);
  const forget = useCallback(() => {
    queryClient.clear();
    queryClient.setQueryData(queryKeys.session, null);
  }, [queryClient]);
  const signIn = useMutation({
    mutationFn: (body: Body<'auth.signIn'>) => anonymous.auth.signIn({ body }),
    onSuccess: (session) => queryClient.setQueryData(queryKeys.session, session),
  });
  const { reset: resetSignIn } = signIn;
  // While signing out, the 401s of requests already under way are the sign-out's, not news to show.
  const leaving = useRef(false);
  const signOut = useMutation({
    onMutate: () => {
      leaving.current = true;
    },
    // A session that already ended (401) is as signed out as one ended now.
    mutationFn: () =>
      client!.auth
        .signOut()
        .catch((error: unknown) => (error instanceof SwitchboardError && error.status === 401 ? null : Promise.reject(error))),
    onSuccess: () => {
      setEnded(null);
      resetSignIn();
      forget();
    },
    onSettled: () => {
      leaving.current = false;
    },
  });

  // A session that expired, or whose user was disabled or key revoked meanwhile: the first query or event stream that gets a 401 ends it, and the sign-in page says why.
  const end = useCallback(
    (error: SwitchboardError) => {
      if (leaving.current) return;
      setEnded(error);
      resetSignIn();
      forget();
    },
    [forget, resetSignIn],
  );
  useEffect(
    () =>
      queryClient.getQueryCache().subscribe((event) => {
        const error = event.query.state.error;
        if (event.type === 'updated' && error instanceof SwitchboardError && error.status === 401) end(error);
      }),
    [queryClient, end],
  );

  const { mutate: signOutNow } = signOut;
  const session = useMemo(
    () =>
      client && whoami.data
        ? {
            client,
            whoami: whoami.data,
            can: (permission: Permission) => whoami.data.permissions.includes(permission),
            signOut: () => signOutNow(),
          }
        : null,
    [client, whoami.data, signOutNow],
  );

  // Signing out unmounts the views first: their event stream closes before the session ends.
  if (signOut.isPending) return <p className="splash">Signing out…</p>;
  if (session) {
    return (
      <SessionContext.Provider value={session}>
        <LiveEvents key={session.whoami.session?.id} client={session.client} onRefused={end}>
          <RevocationWatch />
          {children}
        </LiveEvents>
      </SessionContext.Provider>
    );
  }
  if (current.isPending) return <p className="splash">Signing in…</p>;
  return (
    <SignIn
      provider={provider.data?.configured ? provider.data.name : null}
      error={signIn.error ?? ended ?? current.error}
      pending={signIn.isPending}
      onSignIn={(body) => {
        setEnded(null);
        signIn.mutate(body);
      }}
    />
  );
}

/**
 * A key revoked while the console uses a session exchanged for it (`key.revoked`, which an
 * admin's stream carries): asking whoami again gets the 401 that ends the session at once, not
 * at the next refetch of a view.
 */
function RevocationWatch() {
  useLiveRefresh({ queryKey: queryKeys.whoami.all, events: ['key.revoked'] });
  return null;
}
