import { describe, expect, it } from 'vitest';
import { SERVING_SEMI_SPACE_MB, youngGenerationFlag } from '../src/runtime.js';

describe('youngGenerationFlag', () => {
  it('sizes the young generation for serving by default', () => {
    expect(youngGenerationFlag([], undefined)).toBe(`--max-semi-space-size=${SERVING_SEMI_SPACE_MB}`);
    expect(youngGenerationFlag(['--enable-source-maps'], '--max-old-space-size=4096')).toBe(`--max-semi-space-size=${SERVING_SEMI_SPACE_MB}`);
  });

  it("leaves the operator's choice alone, in node's arguments or NODE_OPTIONS, in either spelling", () => {
    expect(youngGenerationFlag(['--max-semi-space-size=8'], undefined)).toBeNull();
    expect(youngGenerationFlag([], '--inspect --max_semi_space_size=64')).toBeNull();
    expect(youngGenerationFlag([], '--min-semi-space-size=4')).toBeNull();
  });
});
