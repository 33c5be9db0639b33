import { describe, expect, it } from 'vitest';
import { auditQuery, parseAuditSearch } from '../../console/src/audit/audit-search.js';
import { resourcePage } from '../../console/src/resource-pages.js';

describe('the audit log’s filters in the URL', () => {
  const now = Date.parse('2030-01-02T12:00:00.000Z');

  it('keeps known values and drops malformed ones', () => {
    expect(
      parseAuditSearch({ page: '3', actor: ' user:ada ', action: 'key.create', resource: 'key_1', outcome: 'denied', within: '24h' }),
    ).toEqual({
      page: 3,
      actor: 'user:ada',
      action: 'key.create',
      resource: 'key_1',
      outcome: 'denied',
      within: '24h',
    });
    expect(parseAuditSearch({ actor: '  ', outcome: 'maybe', from: 'soon', to: '2030-01-01T00:00:00Z' })).toEqual({
      page: undefined,
      actor: undefined,
      action: undefined,
      resource: undefined,
      outcome: undefined,
      within: undefined,
      from: undefined,
      to: '2030-01-01T00:00:00.000Z',
    });
  });

  it('asks GET /audit for the resource by id, and for the window as after/before', () => {
    expect(auditQuery(parseAuditSearch({ actor: 'admin', resource: 'run_1', outcome: 'allowed', within: '1h' }), now)).toEqual({
      actor: 'admin',
      action: undefined,
      resource_id: 'run_1',
      outcome: 'allowed',
      after: '2030-01-02T11:00:00.000Z',
      before: undefined,
    });
    expect(
      auditQuery(parseAuditSearch({ action: 'step.approve', from: '2030-01-01T00:00:00Z', to: '2030-01-02T00:00:00Z' }), now),
    ).toMatchObject({
      action: 'step.approve',
      after: '2030-01-01T00:00:00.000Z',
      before: '2030-01-02T00:00:00.000Z',
    });
  });
});

describe('the console page of a resource', () => {
  it('links what has a page, a step to its run and an access group member to its agent', () => {
    expect(resourcePage({ type: 'run', id: 'run_1' })).toEqual({ to: '/runs/$runId', params: { runId: 'run_1' } });
    expect(resourcePage({ type: 'step', id: 'run_1/gate' })).toEqual({ to: '/runs/$runId', params: { runId: 'run_1' } });
    expect(resourcePage({ type: 'group_member', id: 'reviewers/agent-7' })).toEqual({
      to: '/agents/$agentId',
      params: { agentId: 'agent-7' },
    });
    expect(resourcePage({ type: 'project', id: 'prj_1' })).toEqual({ to: '/tasks/projects/$projectId', params: { projectId: 'prj_1' } });
    expect(resourcePage({ type: 'webhook', id: 'wh_1' })).toEqual({
      to: '/settings/webhooks/$webhookId',
      params: { webhookId: 'wh_1' },
      needs: 'webhooks:admin',
    });
    expect(resourcePage({ type: 'key', id: 'key_1' })).toEqual({ to: '/settings/keys', needs: 'keys:admin' });
  });

  it('links nothing where the console has no page', () => {
    for (const type of ['session', 'capability', 'public_key', 'message', 'path', 'something-new'])
      expect(resourcePage({ type, id: 'x' })).toBeNull();
    expect(resourcePage({ type: 'group_member', id: 'no-agent' })).toBeNull();
  });
});
