import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { topicMatches, topicProblem } from '../../src/kernel/topics.js';

describe('topic patterns', () => {
  it.each([
    ['orders.created', 'orders.created', true],
    ['orders.*', 'orders.created', true],
    ['orders.*', 'orders.eu.created', false],
    ['orders.>', 'orders.eu.created', true],
    ['orders.>', 'orders', false],
    ['*.created', 'orders.created', true],
    ['*', 'orders', true],
    ['>', 'a.b.c', true],
    ['orders.created', 'orders', false],
  ])('%s matches %s: %s', (pattern, topic, expected) => {
    expect(topicMatches(pattern, topic)).toBe(expected);
  });

  it('validates topics and patterns', () => {
    expect(topicProblem('orders.created', false)).toBeNull();
    expect(topicProblem('orders.*', false)).toMatch(/wildcards/);
    expect(topicProblem('orders.>.x', true)).toMatch(/last/);
    expect(topicProblem('orders..x', true)).not.toBeNull();
    expect(topicProblem('', true)).not.toBeNull();
  });

  const token = fc.stringMatching(/^[a-z0-9]{1,5}$/);
  const topic = fc.array(token, { minLength: 1, maxLength: 6 });

  it('a literal pattern matches exactly itself, * one token, > any non-empty tail', () => {
    fc.assert(
      fc.property(topic, topic, (a, b) => {
        expect(topicMatches(a.join('.'), b.join('.'))).toBe(a.join('.') === b.join('.'));
        const starred = a.map((t, i) => (i === 0 ? '*' : t)).join('.');
        expect(topicMatches(starred, ['zz', ...a.slice(1)].join('.'))).toBe(true);
        expect(topicMatches(`${a.join('.')}.>`, [...a, ...b].join('.'))).toBe(true);
        expect(topicMatches(`${a.join('.')}.>`, a.join('.'))).toBe(false);
      }),
    );
  });
});
