import { describe, expect, it } from 'vitest';
import { postgresCapabilities, sqliteCapabilities } from '../../src/db/capabilities.js';

describe('dialect capabilities', () => {
  it('tells a lost deadlock or serialization race (worth running again) from other errors', () => {
    expect(postgresCapabilities.isTransientConflict({ code: '40P01' })).toBe(true);
    expect(postgresCapabilities.isTransientConflict({ code: '40001' })).toBe(true);
    expect(postgresCapabilities.isTransientConflict({ code: '23505' })).toBe(false);
    expect(postgresCapabilities.isTransientConflict(new Error('boom'))).toBe(false);
    expect(sqliteCapabilities.isTransientConflict({ code: 'SQLITE_BUSY' })).toBe(false);
  });
});
