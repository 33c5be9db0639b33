import { describe, expect, it } from 'vitest';
import { mayDecide, namesMe } from '../../console/src/approvals/approvers.js';

const person = (role: string, permissions: string[] = ['approvals:decide']) => ({
  kind: 'user' as const,
  role: role as 'approver',
  username: 'ada',
  agent_id: null,
  permissions: permissions as ['approvals:decide'],
});
const agent = { kind: 'agent' as const, role: 'agent' as const, username: null, agent_id: 'reviewer', permissions: [] };

describe('who a waiting step is for, and who may decide it (as the server rules)', () => {
  it('names a person by user:, anyone by role:, an agent by agent: or its bare id', () => {
    expect(namesMe(['user:ada'], person('viewer'))).toBe(true);
    expect(namesMe(['role:approver'], person('approver'))).toBe(true);
    expect(namesMe(['role:operator', 'user:bob'], person('approver'))).toBe(false);
    expect(namesMe(['reviewer'], agent)).toBe(true);
    expect(namesMe(['agent:reviewer'], agent)).toBe(true);
    expect(namesMe([], person('admin'))).toBe(false);
  });

  it('needs approvals:decide unless the step names the agent; admins override the approvers', () => {
    expect(mayDecide([], person('approver'))).toBe(true);
    expect(mayDecide([], person('viewer', []))).toBe(false);
    expect(mayDecide(['user:ada'], person('viewer', []))).toBe(false);
    expect(mayDecide(['user:bob'], person('approver'))).toBe(false);
    expect(mayDecide(['user:bob'], person('admin'))).toBe(true);
    expect(mayDecide(['role:approver'], person('approver'))).toBe(true);
    expect(mayDecide(['reviewer'], agent)).toBe(true);
    expect(mayDecide([], agent)).toBe(false);
  });
});
