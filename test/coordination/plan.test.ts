import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StepDefinition } from '../../src/coordination/plan-definition.js';
import { compilePlan, validatePlan } from '../../src/coordination/plan.js';

const agent = (id: string, extra: Partial<StepDefinition> = {}): StepDefinition => ({ id, type: 'agent', agent: 'a', ...extra });

describe('plan compilation', () => {
  it('adds condition edges, group membership and sinks', () => {
    const plan = compilePlan({
      steps: [
        { id: 'c', type: 'condition', expression: 'true', then: 'yes', else: ['no'] },
        agent('yes'),
        agent('no'),
        { id: 'p', type: 'parallel', steps: ['x', 'y'] },
        agent('x'),
        agent('y'),
        agent('end', { depends_on: ['yes', 'no', 'p'] }),
        agent('alone'),
      ],
    });
    expect(plan.steps.get('yes')!.deps).toEqual(['c']);
    expect(plan.steps.get('no')!.branchOf).toEqual(['c']);
    expect(plan.steps.get('x')!.group).toBe('p');
    expect(plan.sinks).toEqual(['end', 'alone']);
  });

  it('lets a step read only the outputs of steps certainly finished before it', () => {
    const steps = [
      agent('a'),
      agent('b', { depends_on: ['a'] }),
      { id: 'g', type: 'parallel', steps: ['m'], depends_on: ['b'] } as StepDefinition,
      agent('m', { input: { fromA: '{{steps.a.output}}', fromB: '{{steps.b.output.x}}' } }),
    ];
    expect(validatePlan({ steps })).toEqual([]);
    const readsGroup = [...steps.slice(0, 3), agent('m', { input: { g: '{{steps.g.output}}' } })];
    expect(validatePlan({ steps: readsGroup })[0]!.message).toMatch(/not a dependency/);
  });

  it('finds cycles through dependencies and group membership', () => {
    expect(
      validatePlan({ steps: [agent('a', { depends_on: ['c'] }), agent('b', { depends_on: ['a'] }), agent('c', { depends_on: ['b'] })] })[0]!
        .message,
    ).toMatch(/cycle: (a|b|c) → .* → (a|b|c)/);
    const viaGroup = [{ id: 'g', type: 'parallel', steps: ['m'], depends_on: ['m'] } as StepDefinition, agent('m')];
    expect(validatePlan({ steps: viaGroup })[0]!.message).toMatch(/cycle/);
  });

  it('accepts every acyclic chain and rejects it once an edge closes a loop (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 12 }), fc.nat(), (n, pick) => {
        const chain = Array.from({ length: n }, (_, i) => agent(`s${i}`, i === 0 ? {} : { depends_on: [`s${i - 1}`] }));
        expect(validatePlan({ steps: chain })).toEqual([]);
        const from = pick % n;
        const looped = chain.map((s, i) => (i === 0 ? { ...s, depends_on: [`s${Math.max(from, 1)}`] } : s));
        expect(validatePlan({ steps: looped }).some((p) => p.message.includes('cycle'))).toBe(true);
      }),
    );
  });
});
