import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { list, ok } from '../http/reply.js';
import { DataEnvelope, ListEnvelope, page } from '../http/schemas.js';
import { AuditEntry, AuditVerification, ListAuditQuery } from './schemas.js';
import type { AuditService } from './service.js';

const tags = ['audit'];

export function auditRoutes(service: AuditService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      '/audit',
      {
        config: { permission: 'audit:read' },
        schema: {
          tags,
          summary: 'List audit entries, newest first, filtered by actor, action, resource, outcome and time',
          description:
            'Every change to the control plane (allowed), every tried change that rolled back (failed) and every 401/403 (denied; repeated ones of one actor and operation within SWITCHBOARD_AUDIT_DENIAL_WINDOW_MS are one entry with a `count`, appended when the window ends).',
          querystring: ListAuditQuery,
          response: { 200: ListEnvelope(AuditEntry) },
        },
      },
      async (request, reply) => {
        const { limit: _limit, offset: _offset, ...query } = request.query;
        const window = page(request.query);
        return list(reply, await service.list(query, window), window);
      },
    );

    app.get(
      '/audit/verify',
      {
        config: { permission: 'audit:read' },
        schema: {
          tags,
          summary: 'Verify the audit log’s hash chain from its anchor (where retention last trimmed) to its newest entry',
          description:
            'Reads the log a page at a time. `first_broken` names the first entry whose hash or link to the one before does not hold.',
          response: { 200: DataEnvelope(AuditVerification) },
        },
      },
      async (_request, reply) => ok(reply, await service.verify()),
    );
  };
}
