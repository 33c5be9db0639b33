import { describe, expect, it } from 'vitest';
import { layoutPlan, NODE_HEIGHT, planEdges, type PlanStep } from '../../console/src/plans/plan-layout.js';
import { inputFields, inputTemplate, parseRunInput } from '../../console/src/runs/run-input.js';

const step = (fields: Partial<PlanStep> & { id: string }): PlanStep => ({ type: 'transform', ...fields }) as PlanStep;

describe('the plan graph layout', () => {
  const steps = [
    step({ id: 'fetch', type: 'agent', agent: 'fetcher', input: { url: '{{input.url}}' } }),
    step({ id: 'check', type: 'condition', expression: 'input.n > 3', then: 'big', else: ['small'], depends_on: ['fetch'] }),
    step({ id: 'big', depends_on: ['check'] }),
    step({ id: 'small' }),
    step({ id: 'fan', type: 'parallel', steps: ['left', 'right'], depends_on: ['big', 'small', 'gone'] }),
    step({ id: 'left' }),
    step({ id: 'right' }),
  ];

  it('draws the edges the engine follows: depends_on, then/else (one edge when both), parallel groups; none to unknown steps', () => {
    expect(
      planEdges(steps)
        .map((e) => `${e.source}-${e.kind}->${e.target}`)
        .sort(),
    ).toEqual(
      [
        'fetch-depends_on->check',
        'check-then->big',
        'check-else->small',
        'big-depends_on->fan',
        'small-depends_on->fan',
        'fan-parallel->left',
        'fan-parallel->right',
      ].sort(),
    );
  });

  it('places every step below the steps it follows', () => {
    const { placed, edges, height } = layoutPlan(steps);
    expect(placed.map((p) => p.step.id)).toEqual(steps.map((s) => s.id));
    const y = new Map(placed.map((p) => [p.step.id, p.y]));
    for (const edge of edges) expect(y.get(edge.target)!).toBeGreaterThanOrEqual(y.get(edge.source)! + NODE_HEIGHT);
    expect(height).toBeGreaterThanOrEqual(4 * NODE_HEIGHT);
    // Independent steps share a rank, side by side.
    const x = new Map(placed.map((p) => [p.step.id, p.x]));
    expect(y.get('left')).toBe(y.get('right'));
    expect(x.get('left')).not.toBe(x.get('right'));
  });

  it('lays out an empty plan', () => {
    expect(layoutPlan([])).toMatchObject({ placed: [], edges: [] });
  });
});

describe("a new run's input", () => {
  it("starts from the input fields the steps read, in templates and expressions, not a step's own input", () => {
    const steps = [
      step({
        id: 'a',
        type: 'agent',
        agent: 'x',
        input: { to: '{{ input.recipient }}', text: 'Hi {{input.name}}', again: '{{input.recipient}}' },
      }),
      step({ id: 'b', type: 'condition', expression: 'input.n > 3 and steps.a.input.ignored', then: 'c' }),
      step({ id: 'c' }),
    ];
    expect(inputFields(steps)).toEqual(['recipient', 'name', 'n']);
    expect(JSON.parse(inputTemplate(steps))).toEqual({ recipient: null, name: null, n: null });
    expect(inputTemplate([step({ id: 'alone' })])).toBe('{}');
  });

  it('takes a JSON object (or nothing) and says why anything else is refused', () => {
    expect(parseRunInput(' ')).toEqual({ input: {} });
    expect(parseRunInput('{"n": 4}')).toEqual({ input: { n: 4 } });
    expect(parseRunInput('[1]')).toEqual({ problem: 'The input must be a JSON object ({ … }).' });
    expect(parseRunInput('null')).toEqual({ problem: 'The input must be a JSON object ({ … }).' });
    expect(parseRunInput('{n: 4}')).toMatchObject({ problem: expect.stringMatching(/^Not JSON: /) });
  });
});
