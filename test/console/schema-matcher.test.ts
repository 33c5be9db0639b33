import { describe, expect, it } from 'vitest';
import { schemaMatcher } from '../../console/src/approvals/schema-matcher.js';

describe('schemaMatcher', () => {
  const root = {
    definitions: { email: { type: 'string' as const, pattern: '^[^@]+@[^@]+$' } },
    oneOf: [
      { type: 'object' as const, properties: { kind: { const: 'mail' }, to: { $ref: '#/definitions/email' } }, required: ['kind', 'to'] },
      {
        type: 'object' as const,
        properties: { kind: { const: 'sms' }, number: { type: 'string' as const } },
        required: ['kind', 'number'],
      },
    ],
  };

  it("tells which branch a value matches, resolving the root's definitions", () => {
    const [mail, sms] = root.oneOf;
    expect(schemaMatcher.isValid(mail!, { kind: 'mail', to: 'a@b.c' }, root)).toBe(true);
    expect(schemaMatcher.isValid(mail!, { kind: 'mail', to: 'not an address' }, root)).toBe(false);
    expect(schemaMatcher.isValid(sms!, { kind: 'mail', to: 'a@b.c' }, root)).toBe(false);
    expect(schemaMatcher.isValid(sms!, { kind: 'sms', number: '+33' }, root)).toBe(true);
  });

  it('leaves judging a submitted value to the server', () => {
    expect(schemaMatcher.validateFormData({ kind: 'nothing' }, root)).toEqual({ errors: [], errorSchema: {} });
    expect(schemaMatcher.rawValidation({ type: 'string' }, 3).errors?.length).toBeGreaterThan(0);
  });
});
