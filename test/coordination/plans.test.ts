import { expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/dialects.js';
import { useServer } from '../helpers/server.js';

const P = '/api/v1/coordination/plans';

describeEachDialect('coordination plans', (dialect) => {
  const server = useServer(dialect);

  const twoSteps = (alias: string) => ({
    alias,
    description: 'fetch then summarize',
    steps: [
      { id: 'fetch', type: 'agent', agent: 'fetcher', input: { url: '{{input.url}}' } },
      {
        id: 'summarize',
        type: 'agent',
        capability: 'text.summarize',
        depends_on: ['fetch'],
        input: { text: '{{steps.fetch.output.body}}' },
      },
    ],
  });

  it('creates, reads (by id and alias), lists, versions on update and deletes', async () => {
    const created = await server.api.post(P, twoSteps('crud'));
    expect(created.status).toBe(201);
    const plan = created.body.data;
    expect(plan).toMatchObject({ alias: 'crud', version: 1, description: 'fetch then summarize', output: null, created_by: 'admin' });
    expect(plan.id).toMatch(/^plan_/);
    expect(plan.steps).toHaveLength(2);
    expect((await server.api.get(`${P}/${plan.id}`)).body.data).toEqual(plan);
    expect((await server.api.get(`${P}/crud`)).body.data.id).toBe(plan.id);

    const changed: any = twoSteps('crud');
    changed.steps[1]!.input = { text: '{{steps.fetch.output.body}}', style: 'short' };
    const updated = await server.api.put(`${P}/${plan.id}`, changed);
    expect(updated.status).toBe(200);
    expect(updated.body.data.version).toBe(2);
    expect(updated.body.data.steps[1].input.style).toBe('short');
    const v1 = await server.api.get(`${P}/${plan.id}/versions/1`);
    expect(v1.body.data.version).toBe(1);
    expect(v1.body.data.steps[1].input.style).toBeUndefined();
    expect((await server.api.get(`${P}/${plan.id}/versions/3`)).status).toBe(404);

    const listed = await server.api.get(`${P}?limit=500`);
    expect(listed.body.data.find((p: { id: string }) => p.id === plan.id).version).toBe(2);

    expect((await server.api.delete(`${P}/${plan.id}`)).body.data).toEqual({ id: plan.id, deleted: true });
    expect((await server.api.get(`${P}/${plan.id}`)).status).toBe(404);
    expect((await server.api.get(`${P}/${plan.id}/versions/1`)).status).toBe(404);
  });

  it('rejects a duplicate alias with 409', async () => {
    expect((await server.api.post(P, twoSteps('dup'))).status).toBe(201);
    const again = await server.api.post(P, twoSteps('dup'));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('validates plans with field details and saves nothing invalid', async () => {
    const agent = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: 'agent', agent: 'a', ...extra });
    const cases: [unknown[], string, RegExp][] = [
      [[agent('a'), agent('a')], 'steps[1].id', /duplicate/],
      [[agent('a', { depends_on: ['ghost'] })], 'steps[0].depends_on', /unknown step 'ghost'/],
      [[agent('a', { depends_on: ['b'] }), agent('b', { depends_on: ['a'] })], 'steps', /cycle/],
      [[{ id: 'a', type: 'agent' }], 'steps[0].agent', /exactly one of agent or capability/],
      [[{ id: 'a', type: 'teleport' }], 'steps.0.type', /./],
      [[agent('a', { input: { x: '{{steps.b.output.y}}' } }), agent('b')], 'steps[0]', /not a dependency/],
      [[agent('a', { input: { x: '{{secrets.key}}' } })], 'steps[0]', /must start with input, steps, event or item/],
      [[agent('a', { input: { x: '{{item}}' } })], 'steps[0]', /only defined inside a for_each/],
      [[{ id: 'c', type: 'condition', expression: 'input.x >', then: 'a' }, agent('a')], 'steps[0].expression', /JSONata/],
      [[{ id: 'c', type: 'condition', expression: 'true', then: 'nope' }], 'steps[0].then', /unknown step/],
      [[{ id: 'h', type: 'human_input', prompt: 'name?', schema: { type: 'nonsense' } }], 'steps[0].schema', /valid JSON Schema/],
      [[{ id: 'w', type: 'wait' }], 'steps[0].seconds', /exactly one/],
      [[{ id: 's', type: 'sub_plan', plan_id: 'no-such-plan' }], 'steps[0].plan_id', /unknown plan/],
      [[{ id: 'p', type: 'parallel', for_each: [1, 2] }], 'steps[0].step', /required with for_each/],
      [
        [{ id: 'p', type: 'parallel', steps: ['a'] }, agent('a'), { id: 'q', type: 'parallel', steps: ['a'] }],
        'steps[2].steps',
        /already in parallel/,
      ],
      [[{ id: 't', type: 'transform' }], 'steps[0].expression', /either expression or output/],
      [[], 'steps', /at least one step/],
    ];
    for (const [steps, field, message] of cases) {
      const res = await server.api.post(P, { alias: 'invalid', steps });
      expect(res.status, JSON.stringify(steps)).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      const details = res.body.error.details as { field: string; message: string }[];
      const hit = details.find((d) => d.field === field);
      expect(hit, `${JSON.stringify(steps)} → ${JSON.stringify(details)}`).toBeDefined();
      expect(hit!.message).toMatch(message);
    }
    expect((await server.api.get(`${P}/invalid`)).status).toBe(404);
  });

  it('accepts every step type in one plan, with templates referencing dependencies only', async () => {
    const child = await server.api.post(P, { alias: 'child-for-all', steps: [{ id: 't', type: 'transform', output: { ok: true } }] });
    expect(child.status).toBe(201);
    const res = await server.api.post(P, {
      alias: 'all-types',
      steps: [
        { id: 'ask', type: 'human_input', prompt: 'Which city?', schema: { type: 'object', required: ['city'] } },
        {
          id: 'gate',
          type: 'human_approval',
          prompt: 'Go to {{steps.ask.output.city}}?',
          depends_on: ['ask'],
          timeout_seconds: 60,
          on_timeout: 'reject',
        },
        {
          id: 'check',
          type: 'condition',
          expression: 'steps.ask.output.city = "Paris"',
          then: ['fan'],
          else: ['later'],
          depends_on: ['gate'],
        },
        {
          id: 'fan',
          type: 'parallel',
          for_each: '{{input.items}}',
          step: { type: 'agent', capability: 'work', input: { item: '{{item}}' } },
          max_concurrency: 2,
        },
        { id: 'later', type: 'wait', seconds: 5 },
        {
          id: 'sub',
          type: 'sub_plan',
          plan_id: 'child-for-all',
          depends_on: ['fan', 'later'],
          input: { from: '{{steps.ask.output.city}}' },
        },
        { id: 'shape', type: 'transform', expression: '$count(steps.fan.output)', depends_on: ['sub', 'fan'] },
        { id: 'evt', type: 'wait', event: { topic: 'orders.*', match: { city: '{{steps.ask.output.city}}' } }, depends_on: ['ask'] },
      ],
      output: { count: '{{steps.shape.output}}' },
    });
    expect(res.status, res.text).toBe(201);
  });
});
