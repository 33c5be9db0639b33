/*
 * The console's share of the one event stream, without React or the network:
 * views subscribe with type patterns, each event reaches the matching subscriptions, and the
 * newest events are kept for the Overview's live feed. Unit-tested in test/console/event-hub.test.ts.
 */
import { topicMatches, type Item } from '../../src/client/browser.js';

export type LiveEvent = Item<'events.list'>;

/** How many of the newest events the feed keeps. */
export const FEED_SIZE = 100;

/**
 * Runs `action` at once, then at most once per `ms`: calls in between are folded into one more
 * run at the end of the window, so a burst of 10,000 events costs two runs, not 10,000.
 */
export function throttle(action: () => void, ms: number): { run(): void; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending = false;
  const run = () => {
    if (timer !== undefined) {
      pending = true;
      return;
    }
    action();
    timer = setTimeout(() => {
      timer = undefined;
      if (pending) {
        pending = false;
        run();
      }
    }, ms);
  };
  return {
    run,
    cancel() {
      clearTimeout(timer);
      timer = undefined;
      pending = false;
    },
  };
}

/** Whether any of the type patterns (`agent.*`, `run.>`, an exact type) matches `type`. */
export function matchesAny(patterns: readonly string[], type: string): boolean {
  return patterns.some((pattern) => topicMatches(pattern, type));
}

interface Subscription {
  patterns: readonly string[];
  onEvent(event: LiveEvent): void;
}

export class EventHub {
  private readonly subscriptions = new Set<Subscription>();
  private readonly feedListeners = new Set<() => void>();
  private recent: LiveEvent[] = [];
  /** What the feed's readers see: `recent` as of the last announcement. */
  private snapshot: readonly LiveEvent[] = [];
  private readonly announceFeed: ReturnType<typeof throttle>;

  /** `feedMs`: the feed changes (and its listeners hear of it) at most this often. */
  constructor(feedMs: number) {
    this.announceFeed = throttle(() => {
      this.snapshot = this.recent;
      this.feedListeners.forEach((listener) => listener());
    }, feedMs);
  }

  /** Calls `onEvent` for each event whose type one of `patterns` matches; returns the unsubscribe. */
  subscribe(patterns: readonly string[], onEvent: (event: LiveEvent) => void): () => void {
    const subscription = { patterns, onEvent };
    this.subscriptions.add(subscription);
    return () => this.subscriptions.delete(subscription);
  }

  publish(event: LiveEvent): void {
    for (const subscription of this.subscriptions) if (matchesAny(subscription.patterns, event.type)) subscription.onEvent(event);
    this.recent = [event, ...this.recent.slice(0, FEED_SIZE - 1)];
    this.announceFeed.run();
  }

  /** The newest events seen, newest first (a new array after each change, for useSyncExternalStore). */
  feed(): readonly LiveEvent[] {
    return this.snapshot;
  }

  onFeed(listener: () => void): () => void {
    this.feedListeners.add(listener);
    return () => this.feedListeners.delete(listener);
  }

  /** Drops a feed announcement still due (the stream is closing). */
  close(): void {
    this.announceFeed.cancel();
  }
}
