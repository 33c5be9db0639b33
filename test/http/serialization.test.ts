import { Type } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonObject, NullableTimestamp } from '../../src/http/schemas.js';
import { compileSerializer, forSerialization } from '../../src/http/serialization.js';

const Entry = Type.Object({
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()], { description: 'kept' }),
  role: Type.Union([Type.Literal('admin'), Type.Literal('agent')]),
  revoked_at: NullableTimestamp,
  load: Type.Union([Type.Number(), Type.Null()]),
  output: Type.Union([Type.Object({ a: Type.Integer() }), Type.Null()]),
  tags: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  metadata: JsonObject,
  labels: Type.Record(Type.String(), Type.String()),
  extra: Type.Union([JsonObject, Type.Null()]),
});
const Envelope = Type.Object({ data: Type.Array(Entry), meta: Type.Object({ request_id: Type.String() }) });

describe('response serialization', () => {
  it('turns scalar unions into type lists and leaves unions with objects alone', () => {
    const entry = (forSerialization(Envelope) as any).properties.data.items.properties;
    expect(entry.name).toEqual({ description: 'kept', type: ['string', 'null'] });
    expect(entry.role).toEqual({ type: 'string' });
    expect(entry.revoked_at).toEqual({ format: 'date-time', type: ['string', 'null'] });
    expect(entry.load).toEqual({ type: ['number', 'null'] });
    expect(entry.tags.items).toEqual({ type: ['string', 'integer'] });
    expect(entry.output.anyOf).toHaveLength(2);
  });

  it('leaves free-form objects to JSON.stringify, and typed records as they are', () => {
    const entry = (forSerialization(Envelope) as any).properties.data.items.properties;
    expect(entry.metadata).toEqual({ description: 'Free-form JSON object' });
    expect(entry.labels.patternProperties).toBeDefined();
    expect(entry.extra.anyOf[0]).toEqual({ description: 'Free-form JSON object' });
  });

  it('leaves the schema it was given untouched (validation and OpenAPI keep the unions)', () => {
    const before = JSON.stringify(Envelope);
    forSerialization(Envelope);
    expect(JSON.stringify(Envelope)).toBe(before);
  });

  it('writes exactly what the union-checking serializer writes, for any valid value', () => {
    const withUnions = fastJson(Envelope as never);
    const withTypes = compileSerializer({ schema: Envelope });
    const entry = fc.record({
      id: fc.string(),
      name: fc.option(fc.string(), { nil: null }),
      role: fc.constantFrom('admin', 'agent'),
      revoked_at: fc.option(
        fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
        { nil: null },
      ),
      load: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: null }),
      output: fc.option(fc.record({ a: fc.integer() }), { nil: null }),
      tags: fc.array(fc.oneof(fc.string(), fc.integer())),
      metadata: fc.dictionary(fc.string(), fc.jsonValue()),
      labels: fc.dictionary(fc.string(), fc.string()),
      extra: fc.option(fc.dictionary(fc.string(), fc.jsonValue()), { nil: null }),
    });
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), fc.string(), (data, requestId) => {
        const value = { data, meta: { request_id: requestId } };
        const written = withTypes(value);
        expect(written).toBe(withUnions(value));
        expect(JSON.parse(written)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});
