import { describe, expect, it } from 'vitest';
import { TurnBatch } from '../../src/kernel/turn-batch.js';

/** A batch runner that records each run's items and fails any run holding a 'bad' item. */
function recorder() {
  const runs: string[][] = [];
  const batch = new TurnBatch<string, string>(async (items) => {
    runs.push([...items]);
    if (items.includes('bad')) throw new Error(`refused ${items.join(',')}`);
    return items.map((item) => item.toUpperCase());
  }, 3);
  return { runs, batch };
}

describe('TurnBatch', () => {
  it('runs the calls of one turn together, in the order they came, and answers each', async () => {
    const { runs, batch } = recorder();
    const answers = await Promise.all([batch.add('a'), batch.add('b')]);
    expect(answers).toEqual(['A', 'B']);
    expect(runs).toEqual([['a', 'b']]);
  });

  it('runs a call of a later turn in a batch of its own', async () => {
    const { runs, batch } = recorder();
    await batch.add('a');
    await batch.add('b');
    expect(runs).toEqual([['a'], ['b']]);
  });

  it('starts a new batch once one holds maxItems calls', async () => {
    const { runs, batch } = recorder();
    const answers = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((item) => batch.add(item)));
    expect(answers).toEqual(['A', 'B', 'C', 'D', 'E']);
    expect(runs).toEqual([
      ['a', 'b', 'c'],
      ['d', 'e'],
    ]);
  });

  it('asks each call of a failed batch again on its own, so only the failing call fails', async () => {
    const { runs, batch } = recorder();
    const results = await Promise.allSettled([batch.add('a'), batch.add('bad'), batch.add('c')]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual(['A', 'refused bad', 'C']);
    expect(runs).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });
});
