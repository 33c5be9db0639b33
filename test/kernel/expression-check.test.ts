import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { expressionProblem, MAX_CONSTANT_RANGE, wideRange } from '../../src/kernel/expression-check.js';

const ast = (text: string) => jsonata(text).ast();

describe('the constant range check', () => {
  it('finds a range with literal ends wider than the bound, wherever it sits in the expression', () => {
    expect(wideRange(ast('[1..10000000]'))).toEqual([1, 10_000_000]);
    expect(wideRange(ast('$count([1..10000000].$string($))'))).toEqual([1, 10_000_000]);
    expect(wideRange(ast('input.x ? { "a": [0..200000] } : []'))).toEqual([0, 200_000]);
    expect(wideRange(ast('$map([-100000..(1)], function($v) { $v })'))).toEqual([-100_000, 1]);
    expect(wideRange(ast('( $r := [1 .. 1e6]; $count($r) )'))).toEqual([1, 1_000_000]);
  });

  it('leaves ranges at the bound, reversed or empty ranges, and ranges over data alone', () => {
    expect(wideRange(ast(`[1..${MAX_CONSTANT_RANGE}]`))).toBeNull();
    expect(wideRange(ast(`[0..${MAX_CONSTANT_RANGE}]`))).toEqual([0, MAX_CONSTANT_RANGE]);
    expect(wideRange(ast('[10000000..1]'))).toBeNull();
    expect(wideRange(ast('[1..input.n]'))).toBeNull();
    expect(wideRange(ast('[1..$count(input.items) * 1000000]'))).toBeNull();
    expect(wideRange(ast('[1..10].[1..10]'))).toBeNull();
    expect(wideRange(ast('input.amount > 100'))).toBeNull();
  });

  it('says what is wrong with an expression: a syntax error or a range too wide', () => {
    expect(expressionProblem('input.n * 2')).toBeNull();
    expect(expressionProblem('amount >')).toMatch(/^is not a valid JSONata expression: /);
    expect(expressionProblem('[1..100001]')).toBe('builds the range [1..100001]; a range with constant ends holds at most 100,000 numbers');
  });
});
