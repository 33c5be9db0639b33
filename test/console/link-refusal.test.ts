import { describe, expect, it } from 'vitest';
import { linkRefusal } from '../../console/src/approvals/link-refusal.js';

describe('console: why an approval link no longer decides', () => {
  it('names who decided when, from the 409 of a used link', () => {
    const details = { decided_by: 'approval_link', decided_at: '2030-01-01T12:00:00.000Z' };
    expect(
      linkRefusal({ status: 409, message: "Step 'gate' was already decided by approval_link at 2030-01-01T12:00:00.000Z", details }),
    ).toEqual({
      kind: 'decided',
      by: 'approval_link',
      at: '2030-01-01T12:00:00.000Z',
    });
  });

  it('tells an expired link, a cancelled run, a later ask and a step that stopped waiting apart', () => {
    const kind = (message: string) => linkRefusal({ status: 409, message })?.kind;
    expect(kind('This link expired at 2030-01-08T12:00:00.000Z')).toBe('expired');
    expect(kind("Run 'run_1' was cancelled: no longer needed")).toBe('cancelled');
    expect(kind("This link is for an earlier wait of step 'gate'; the step asks again with a new link")).toBe('superseded');
    expect(kind("Step 'gate' is failed, not waiting")).toBe('closed');
  });

  it('treats a forged token (404) and a malformed one (400 about the path) as not found, and other errors as none', () => {
    expect(linkRefusal({ status: 404, message: 'Approval link not found' })?.kind).toBe('not_found');
    expect(
      linkRefusal({ status: 400, message: 'Invalid request', details: [{ field: 'token', in: 'params', message: 'must match pattern' }] })
        ?.kind,
    ).toBe('not_found');
    expect(
      linkRefusal({
        status: 400,
        message: 'data does not match the step schema',
        details: [{ field: 'data.version', message: 'must be string' }],
      }),
    ).toBeNull();
    expect(linkRefusal({ status: 500, message: 'Internal server error' })).toBeNull();
  });
});
