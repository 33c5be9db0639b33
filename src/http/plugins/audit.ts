import type { FastifyInstance, FastifyRequest } from 'fastify';
import { runInScope, type AuditActor, type RequestScope } from '../../kernel/request-scope.js';
import type { ErrorAudit } from '../error-handler.js';
import { operationName } from '../openapi.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the audit log records of this request (set before its handler runs). */
    auditScope?: RequestScope;
  }
}

/** What the HTTP layer tells the audit log (audit/service.ts). */
export interface RequestAudit {
  denied(scope: RequestScope, operation: string, path: string, status: number): void;
  failed(scope: RequestScope, status: number): Promise<void>;
}

/** Who a request is (the authenticator's answer). */
export type ActorOf = (request: FastifyRequest) => AuditActor;

function scopeOf(request: FastifyRequest, actorOf: ActorOf): RequestScope {
  const userAgent = request.headers['user-agent'];
  return (
    request.auditScope ?? {
      actor: actorOf(request),
      requestId: request.id,
      ip: request.ip,
      userAgent: userAgent ?? null,
      recorded: [],
    }
  );
}

/**
 * Every handler runs in its request's scope (kernel/request-scope.ts), so the changes the
 * services record name who asked, from where, with which request id, without services seeing
 * HTTP. Set in preHandler, after the body was read and the signature verified: a handler's
 * own asynchronous work inherits it from there.
 */
export function installAuditScope(app: FastifyInstance, audit: RequestAudit, actorOf: ActorOf): void {
  app.addHook('preHandler', (request, _reply, done) => {
    const path = request.url.split('?')[0]!;
    const scope: RequestScope = {
      ...scopeOf(request, actorOf),
      denied: (operation, status) => audit.denied(scope, operation, path, status),
    };
    request.auditScope = scope;
    runInScope(scope, done);
  });
}

/**
 * The error handler's audit: a 401 or 403 is a denial of the operation the route serves (named
 * as the SDK names it), coalesced by the audit log; any other error after the handler recorded
 * changes makes those that rolled back failed entries.
 */
export function errorAudit(audit: RequestAudit, actorOf: ActorOf): ErrorAudit {
  return (request, status) => {
    if (status === 401 || status === 403) {
      const url = request.routeOptions.url;
      const operation =
        (url !== undefined && operationName(request.method, url)) || `${request.method} ${url ?? request.url.split('?')[0]}`;
      audit.denied(scopeOf(request, actorOf), operation, request.url.split('?')[0]!, status);
      return;
    }
    const scope = request.auditScope;
    if (scope && scope.recorded.length > 0) return audit.failed(scope, status);
  };
}
