import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { collectReferences, parseReference, render, TemplateError, type TemplateScope } from '../../src/coordination/templates.js';

const scope: TemplateScope = {
  input: { name: 'Ada', count: 3, tags: ['a', 'b'], nested: { deep: { value: true } }, empty: null },
  steps: { fetch: { output: { items: [{ id: 7 }, { id: 8 }], total: 2 } } },
  event: { topic: 'orders.paid' },
  item: { sku: 'x-1' },
};

describe('templates', () => {
  it('an exact template keeps the JSON type of what it references', () => {
    expect(render('{{input.count}}', scope)).toBe(3);
    expect(render('{{ input.tags }}', scope)).toEqual(['a', 'b']);
    expect(render('{{input.nested}}', scope)).toEqual({ deep: { value: true } });
    expect(render('{{input.nested.deep.value}}', scope)).toBe(true);
    expect(render('{{steps.fetch.output.items[1].id}}', scope)).toBe(8);
    expect(render('{{item.sku}}', scope)).toBe('x-1');
    expect(render('{{event.topic}}', scope)).toBe('orders.paid');
  });

  it('a missing value is null when exact and empty text when interpolated', () => {
    expect(render('{{input.nope}}', scope)).toBeNull();
    expect(render('{{input.empty}}', scope)).toBeNull();
    expect(render('{{steps.fetch.output.items[9].id}}', scope)).toBeNull();
    expect(render('[{{input.nope}}]', scope)).toBe('[]');
  });

  it('interpolates templates inside longer strings as text (objects as JSON)', () => {
    expect(render('Hello {{input.name}}, {{input.count}} new', scope)).toBe('Hello Ada, 3 new');
    expect(render('tags={{input.tags}}', scope)).toBe('tags=["a","b"]');
  });

  it('renders nested objects and arrays and leaves other values alone', () => {
    expect(render({ a: ['{{input.count}}', 'x'], b: { c: '{{input.name}}' }, d: 4, e: null, f: false }, scope)).toEqual({
      a: [3, 'x'],
      b: { c: 'Ada' },
      d: 4,
      e: null,
      f: false,
    });
  });

  it('parses references and names what is wrong with bad ones', () => {
    expect(parseReference('steps.a.output.b[2].c')).toEqual({
      expression: 'steps.a.output.b[2].c',
      root: 'steps',
      path: ['a', 'output', 'b', 2, 'c'],
    });
    expect(parseReference('secret.x')).toMatch(/must start with input, steps, event or item/);
    expect(parseReference('steps.a.input')).toMatch(/steps.<step_id>.output/);
    expect(parseReference('input..x')).toMatch(/is not a path/);
    expect(() => render('{{nope}}', scope)).toThrow(TemplateError);
    expect(collectReferences({ a: ['{{input.x}} and {{steps.s.output}}'], b: 1 }).length).toBe(2);
  });

  it('text without templates is returned unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => !s.includes('{{')),
        (text) => render(text, scope) === text,
      ),
    );
  });

  it('an exact template returns any JSON value unchanged (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const rendered = render('{{input.value}}', { input: { value }, steps: {}, event: {} });
        expect(rendered).toEqual(value ?? null);
      }),
    );
  });

  it('rendering a template-free JSON document is the identity (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        fc.pre(!JSON.stringify(value).includes('{{'));
        expect(render(value, scope)).toEqual(value);
      }),
    );
  });
});

describe('templates and prototypes', () => {
  it('reads own properties only and keeps __proto__ keys as data', () => {
    expect(render('{{input.constructor}}', scope)).toBeNull();
    expect(render('{{input.name.length}}', scope)).toBeNull();
    const rendered = render(JSON.parse('{"__proto__": {"polluted": "{{input.name}}"}}'), scope) as Record<string, unknown>;
    expect(Object.getPrototypeOf(rendered)).toBe(Object.prototype);
    expect(Object.hasOwn(rendered, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
