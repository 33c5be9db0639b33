import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventHub, FEED_SIZE, matchesAny, throttle, type LiveEvent } from '../../console/src/event-hub.js';

const event = (type: string, n = 0): LiveEvent => ({
  id: `evt_${n}`,
  type,
  subject: `s${n}`,
  actor: 'admin',
  data: {},
  reason: null,
  created_at: new Date(0).toISOString(),
});

describe("the console's share of the event stream", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('matches event types with design §8 patterns: * one segment, > any depth, or the exact type', () => {
    expect(matchesAny(['agent.*'], 'agent.registered')).toBe(true);
    expect(matchesAny(['run.*'], 'run.step.completed')).toBe(false);
    expect(matchesAny(['run.>'], 'run.step.completed')).toBe(true);
    expect(matchesAny(['run.>'], 'run')).toBe(false);
    expect(matchesAny(['key.revoked'], 'key.revoked')).toBe(true);
    expect(matchesAny(['key.revoked'], 'key.created')).toBe(false);
    expect(matchesAny(['task.*', 'routine.>'], 'routine.execution.failed')).toBe(true);
    expect(matchesAny([], 'task.created')).toBe(false);
  });

  it('folds a burst into one run at once and one at the end of the window', () => {
    const action = vi.fn();
    const coalesced = throttle(action, 250);
    for (let i = 0; i < 10_000; i++) coalesced.run();
    expect(action).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(250);
    expect(action).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(1_000);
    expect(action).toHaveBeenCalledTimes(2);
    // A quiet window later, the next call runs at once again; a cancelled one does not run at all.
    coalesced.run();
    expect(action).toHaveBeenCalledTimes(3);
    coalesced.run();
    coalesced.cancel();
    vi.advanceTimersByTime(1_000);
    expect(action).toHaveBeenCalledTimes(3);
  });

  it('hands each event to the subscriptions whose patterns match it, until they unsubscribe', () => {
    const hub = new EventHub(250);
    const agents: string[] = [];
    const runs: string[] = [];
    const stopAgents = hub.subscribe(['agent.*'], (e) => agents.push(e.type));
    hub.subscribe(['run.>'], (e) => runs.push(e.type));
    hub.publish(event('agent.registered'));
    hub.publish(event('run.step.completed'));
    hub.publish(event('task.created'));
    stopAgents();
    hub.publish(event('agent.deregistered'));
    expect(agents).toEqual(['agent.registered']);
    expect(runs).toEqual(['run.step.completed']);
  });

  it('keeps the newest events for the feed, newest first, and tells its readers at most once per window', () => {
    const hub = new EventHub(250);
    const heard = vi.fn();
    hub.onFeed(heard);
    hub.publish(event('task.created', 1));
    expect(heard).toHaveBeenCalledTimes(1);
    expect(hub.feed().map((e) => e.id)).toEqual(['evt_1']);
    for (let n = 2; n <= FEED_SIZE + 10; n++) hub.publish(event('task.created', n));
    // Within the window the readers keep what they were told…
    expect(hub.feed()).toHaveLength(1);
    vi.advanceTimersByTime(250);
    // …and hear once more at its end, of the newest FEED_SIZE.
    expect(heard).toHaveBeenCalledTimes(2);
    expect(hub.feed()).toHaveLength(FEED_SIZE);
    expect(hub.feed()[0]!.id).toBe(`evt_${FEED_SIZE + 10}`);
    expect(hub.feed().at(-1)!.id).toBe('evt_11');
  });
});
