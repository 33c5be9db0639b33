import { useQueryClient, type QueryKey } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useMemo, useState, useSyncExternalStore, type ReactNode } from 'react';
import { SwitchboardError, type Switchboard } from '../../src/client/browser.js';
import { EventHub, throttle, type LiveEvent } from './event-hub.js';

/** A burst of events refetches a subscription's queries at most once per this many ms. */
const COALESCE_MS = 250;

/**
 * connecting until the server first answers the stream; live only while it is open;
 * reconnecting after it dropped (the server or the network is away) until it opens again;
 * stopped when the server refused it for good.
 */
export type LiveState =
  { state: 'connecting' } | { state: 'live' } | { state: 'reconnecting'; error: unknown } | { state: 'stopped'; error: unknown };

interface Live {
  hub: EventHub;
  status: LiveState;
}

const LiveContext = createContext<Live | null>(null);

function useLive(): Live {
  const live = useContext(LiveContext);
  if (!live) throw new Error('live updates outside LiveEvents');
  return live;
}

/**
 * The session's one GET /api/v1/events/stream (views stay live through the stream, not by
 * polling), shared by every view below it. The SDK resumes a dropped stream with Last-Event-ID,
 * so nothing is missed, and the status says "Reconnecting…" until it has; an answer it cannot
 * retry ends it: `onRefused` (stable) for a 401 (the session ended), otherwise the status says
 * live updates stopped.
 */
export function LiveEvents({
  client,
  onRefused,
  children,
}: {
  client: Switchboard;
  onRefused(error: SwitchboardError): void;
  children: ReactNode;
}) {
  const queryClient = useQueryClient();
  const hub = useMemo(() => new EventHub(COALESCE_MS), []);
  const [status, setStatus] = useState<LiveState>({ state: 'connecting' });

  useEffect(() => {
    const stop = new AbortController();
    let opened = false;
    const onOpen = () => {
      setStatus({ state: 'live' });
      // What views loaded before the first opening may have changed meanwhile. A reopening
      // resumes the events without a gap, but what failed to load during the outage (a view
      // opened meanwhile, a refetch) loads again now, by itself.
      if (!opened) void queryClient.invalidateQueries();
      else void queryClient.refetchQueries({ predicate: (query) => query.state.status === 'error' });
      opened = true;
    };
    const onDrop = (error: unknown) => setStatus({ state: 'reconnecting', error });
    void (async () => {
      try {
        for await (const event of client.events.stream({ signal: stop.signal, onOpen, onDrop })) hub.publish(event);
      } catch (error) {
        if (stop.signal.aborted) return;
        if (error instanceof SwitchboardError && error.status === 401) onRefused(error);
        else setStatus({ state: 'stopped', error });
      }
    })();
    return () => {
      stop.abort();
      hub.close();
    };
  }, [client, hub, queryClient, onRefused]);

  const live = useMemo(() => ({ hub, status }), [hub, status]);
  return <LiveContext.Provider value={live}>{children}</LiveContext.Provider>;
}

/** Whether the session's event stream is open. */
export function useLiveStatus(): LiveState {
  return useLive().status;
}

export interface LiveData {
  /** The queries a change makes stale (a prefix: `['agents']` covers every agents query). */
  queryKey: QueryKey;
  /** The event types that change them, as event type patterns (`agent.*`, `key.>`). */
  events: readonly string[];
}

/**
 * Keeps a view's queries fresh: the one seam for live updates. Each event of the session's
 * stream whose type matches `events` invalidates `queryKey`, a burst at most once per COALESCE_MS.
 */
export function useLiveRefresh({ queryKey, events }: LiveData): void {
  const { hub } = useLive();
  const queryClient = useQueryClient();
  // Written inline, the key and the patterns are new arrays on every render: compare them by value.
  const key = JSON.stringify(queryKey);
  const patterns = JSON.stringify(events);
  useEffect(() => {
    const refresh = throttle(() => void queryClient.invalidateQueries({ queryKey: JSON.parse(key) as QueryKey }), COALESCE_MS);
    const unsubscribe = hub.subscribe(JSON.parse(patterns) as string[], refresh.run);
    return () => {
      unsubscribe();
      refresh.cancel();
    };
  }, [hub, queryClient, key, patterns]);
}

/** The newest `limit` events of the session's stream, newest first (the Overview's live feed). */
export function useEventFeed(limit: number): readonly LiveEvent[] {
  const { hub } = useLive();
  const feed = useSyncExternalStore(
    (listener) => hub.onFeed(listener),
    () => hub.feed(),
  );
  return useMemo(() => feed.slice(0, limit), [feed, limit]);
}
