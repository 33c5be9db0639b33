import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Page, Paged } from '../kernel/pagination.js';

/** The success envelope. Routes end with one of these. */
export function ok<T>(reply: FastifyReply, data: T, status = 200) {
  return reply.code(status).send({ data, meta: { request_id: reply.request.id } });
}

/** The success envelope with more meta fields (e.g. the strategy that ordered a lookup). */
export function okWithMeta<T>(reply: FastifyReply, data: T, meta: Record<string, unknown>) {
  return reply.code(200).send({ data, meta: { ...meta, request_id: reply.request.id } });
}

export function created<T>(reply: FastifyReply, data: T) {
  return ok(reply, data, 201);
}

export function accepted<T>(reply: FastifyReply, data: T) {
  return ok(reply, data, 202);
}

export function deleted(reply: FastifyReply, id: string) {
  return ok(reply, { id, deleted: true as const });
}

export function list<T>(reply: FastifyReply, result: Paged<T>, window: Page) {
  return reply.code(200).send({
    data: result.items,
    meta: {
      request_id: reply.request.id,
      total: result.total,
      limit: window.limit,
      offset: window.offset,
      ...(result.totalEstimated === true && { total_estimated: true }),
      ...(result.nextCursor !== undefined && { next_cursor: result.nextCursor }),
    },
  });
}

/** The path and query exactly as the client sent them (what a request signature covers). */
export function pathWithQuery(request: FastifyRequest): string {
  return request.raw.url ?? request.url;
}
