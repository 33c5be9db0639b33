import { afterEach, describe, expect, it } from 'vitest';
import { ExpressionError, ExpressionPool } from '../../src/kernel/expression-pool.js';

describe('ExpressionPool', () => {
  let pool: ExpressionPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });
  const open = (limits: Partial<ConstructorParameters<typeof ExpressionPool>[0]> = {}) =>
    (pool = new ExpressionPool({ workers: 1, timeoutMs: 5000, maxResultBytes: 1024, heapMb: 64, ...limits }));

  it('evaluates expressions over their input in a child process, and says why one fails', async () => {
    const expressions = open();
    expect(await expressions.evaluate('input.n * 2', { input: { n: 21 } })).toBe(42);
    expect(await expressions.evaluate('event.missing', { event: {} })).toBeUndefined();
    expect(await expressions.evaluate('[1..3].{ "i": $ }', {})).toEqual([{ i: 1 }, { i: 2 }, { i: 3 }]);
    const failed = await expressions.evaluate('$error("no amount")', {}).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(ExpressionError);
    expect(failed).toMatchObject({ kind: 'failed', message: 'no amount' });
  });

  it('kills a process past the time budget, fails only its task, and goes on with a fresh process', async () => {
    const expressions = open({ timeoutMs: 300 });
    // Started and ready first, so that the budget is the slow expression's alone.
    expect(await expressions.evaluate('0', {})).toBe(0);
    const slow = expressions.evaluate('$count([1..100000].[1..100000])', {}).catch((err: unknown) => err);
    // Waits behind the slow one (one process), then runs in its replacement.
    const next = expressions.evaluate('1 + 1', {});
    expect(await slow).toMatchObject({ kind: 'budget', message: expect.stringMatching(/exceeded its (time|memory) budget/) });
    expect(await next).toBe(2);
  });

  it('fails a task out of memory with the memory budget error', async () => {
    const expressions = open({ timeoutMs: 60_000, heapMb: 16 });
    const failed = await expressions.evaluate('$count([1..10000000].$string($))', {}).catch((err: unknown) => err);
    expect(failed).toMatchObject({ kind: 'budget', message: 'the expression exceeded its memory budget (16 MB)' });
    expect(await expressions.evaluate('"still here"', {})).toBe('still here');
  });

  it('refuses a result larger than the size budget', async () => {
    const expressions = open({ maxResultBytes: 1024 });
    const failed = await expressions.evaluate('[1..1000]', {}).catch((err: unknown) => err);
    expect(failed).toMatchObject({
      kind: 'budget',
      message: expect.stringMatching(/^the expression's result exceeded its size budget \(\d+ bytes, at most 1024\)$/),
    });
  });

  it('fails an expression at once while the queue is full, and takes them again once it has room', async () => {
    const expressions = open({ timeoutMs: 5000, maxQueued: 2 });
    expect(await expressions.evaluate('0', {})).toBe(0);
    // One running in the only process, two waiting: the queue is full.
    const running = expressions.evaluate('$count([1..3000000])', {});
    const waiting = [expressions.evaluate('1', {}), expressions.evaluate('2', {})];
    const refused = await expressions.evaluate('3', {}).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ExpressionError);
    expect(refused).toMatchObject({ kind: 'budget', message: 'too many expressions are waiting to be evaluated (2); try again later' });
    expect(await running).toBe(3_000_000);
    expect(await Promise.all(waiting)).toEqual([1, 2]);
    expect(await expressions.evaluate('4', {})).toBe(4);
  });

  it('on close fails what waits, and evaluates nothing more', async () => {
    const expressions = open({ timeoutMs: 5000 });
    expect(await expressions.evaluate('0', {})).toBe(0);
    const running = expressions.evaluate('$count([1..100000].[1..100000])', {}).catch((err: unknown) => err);
    const waiting = expressions.evaluate('1', {}).catch((err: unknown) => err);
    await expressions.close();
    expect(((await running) as Error).message).toBe('the expression pool is closed');
    expect(((await waiting) as Error).message).toBe('the expression pool is closed');
    await expect(expressions.evaluate('1', {})).rejects.toThrow('the expression pool is closed');
  });
});
