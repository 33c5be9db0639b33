import { describe, expect, it } from 'vitest';
import { errorTreeOf, fieldSegments, parseJsonObject, schemaHasFields } from '../../console/src/approvals/json-form-model.js';

describe('console: the JSON form', () => {
  it('reads the API field paths: dotted, bracketed indexes, JSON Pointer escapes', () => {
    expect(fieldSegments('data')).toEqual(['data']);
    expect(fieldSegments('data.items.0.name')).toEqual(['data', 'items', '0', 'name']);
    expect(fieldSegments('steps[0].depends_on')).toEqual(['steps', '0', 'depends_on']);
    expect(fieldSegments('data.a~1b.c~0d')).toEqual(['data', 'a/b', 'c~d']);
  });

  it("puts the server's problems of the form's value at their fields, and leaves the others out", () => {
    const details = [
      { field: 'data.version', message: 'must be string' },
      { field: 'data.version', message: 'must match pattern "^\\d"' },
      { field: 'data.items.1.name', message: 'is required' },
      { field: 'data', message: 'must NOT have additional properties' },
      { field: 'comment', message: 'must NOT have more than 4000 characters', in: 'body' },
      { field: 'datum', message: 'a field that only starts like the root' },
      { field: 'data.limit', message: 'of the query string', in: 'querystring' },
    ];
    expect(errorTreeOf(details, 'data')).toEqual({
      __errors: ['must NOT have additional properties'],
      version: { __errors: ['must be string', 'must match pattern "^\\d"'] },
      items: { 1: { name: { __errors: ['is required'] } } },
    });
  });

  it('maps every body problem when the value is the whole body, and nothing from what is not a field list', () => {
    expect(errorTreeOf([{ field: 'name', message: 'is required', in: 'body' }], '')).toEqual({ name: { __errors: ['is required'] } });
    expect(errorTreeOf([{ field: 'comment', message: 'too long' }], 'data')).toBeUndefined();
    // A 409's details are an object (who decided when), not field problems.
    expect(errorTreeOf({ decided_by: 'approval_link', decided_at: '2025-01-01T00:00:00.000Z' }, 'data')).toBeUndefined();
    expect(errorTreeOf(undefined, 'data')).toBeUndefined();
    expect(errorTreeOf([{ field: 'data.__errors', message: 'odd name' }], 'data')).toEqual({ __errors: ['odd name'] });
  });

  it('lays out a schema with properties as a form, and anything else as JSON text', () => {
    expect(schemaHasFields({ type: 'object', properties: { version: { type: 'string' } } })).toBe(true);
    for (const schema of [null, undefined, {}, { type: 'object' }, { type: 'object', properties: {} }])
      expect(schemaHasFields(schema)).toBe(false);
  });

  it('takes a JSON object from the text field, and says why anything else is refused', () => {
    expect(parseJsonObject('{"a": 1}')).toEqual({ value: { a: 1 } });
    expect(parseJsonObject('  ')).toEqual({ value: {} });
    expect(parseJsonObject('[1]')).toEqual({ problem: 'Must be a JSON object ({ … })' });
    expect(parseJsonObject('null')).toEqual({ problem: 'Must be a JSON object ({ … })' });
    expect(parseJsonObject('{a: 1}')).toMatchObject({ problem: expect.stringMatching(/^Not valid JSON: /) });
  });
});
