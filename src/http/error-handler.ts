import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { storageFault, type StorageFullness } from '../db/faults.js';
import { AppError, ERROR_STATUS, InsufficientStorage, ServiceUnavailable, type ErrorCode, type FieldProblem } from '../kernel/errors.js';
import { closeAfterAnswer } from './lingering-close.js';

interface AjvIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/** Turns ajv's findings into `{field, in, message}` entries a client can act on. */
function fieldProblems(issues: AjvIssue[], location: string): (FieldProblem & { in: string })[] {
  return issues.map((issue) => {
    const segments = (issue.instancePath ?? '').split('/').filter(Boolean);
    let message = issue.message ?? 'is invalid';
    if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
      segments.push(issue.params.missingProperty);
      message = 'is required';
    } else if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
      segments.push(issue.params.additionalProperty);
      message = 'is not a known field';
    }
    return { field: segments.join('.') || location, in: location, message };
  });
}

// Fastify's own client errors, by code, with the envelope code they become.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_VALIDATION: 'invalid_request',
};

function send(reply: FastifyReply, code: ErrorCode, message: string, details?: unknown, headers?: Record<string, string>) {
  if (headers) for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  closeAfterAnswer(reply);
  const error: { code: ErrorCode; message: string; details?: unknown } = { code, message };
  if (details !== undefined) error.details = details;
  return reply.code(ERROR_STATUS[code]).send({ error, meta: { request_id: reply.request.id } });
}

/** Seconds a client is told to wait before retrying while the database cannot be reached. */
const UNAVAILABLE_RETRY_AFTER_S = 1;

/** A storage failure (db/faults.ts) as the typed error the client sees, or the error unchanged. */
function typedStorageFault(err: FastifyError | AppError, storage: StorageFullness): FastifyError | AppError {
  switch (storageFault(err)) {
    case 'unavailable':
      return new ServiceUnavailable('The database cannot be reached right now; retry shortly', UNAVAILABLE_RETRY_AFTER_S);
    case 'full':
      storage.full = true;
      return new InsufficientStorage('No storage space is left for this write; reads still work');
    default:
      return err;
  }
}

/**
 * The one place errors become HTTP responses (design §2). Typed errors keep their code and
 * message; validation errors list every bad field; a database out of reach is a 503 with
 * Retry-After and a full disk a 507 (noted in `storage` for /readyz); anything else unexpected
 * is logged and answered with a bare 500 that leaks nothing.
 */
export function installErrorHandling(app: FastifyInstance, storage: StorageFullness): void {
  app.setErrorHandler((thrown: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const err = thrown instanceof AppError ? thrown : typedStorageFault(thrown, storage);
    if (err instanceof AppError) {
      if (err !== thrown) request.log.error({ err: thrown }, 'storage failure');
      else if (err.status >= 500) request.log.error({ err }, 'request failed');
      return send(reply, err.code, err.message, err.details, err.headers);
    }
    const fastifyError = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
    if (fastifyError.validation) {
      const details = fieldProblems(fastifyError.validation, fastifyError.validationContext ?? 'body');
      const summary = details.map((d) => `${d.field} ${d.message}`).join('; ');
      return send(reply, 'invalid_request', `Invalid request: ${summary}`, details);
    }
    const mapped = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
    if (mapped) return send(reply, mapped, fastifyError.message);
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = (Object.entries(ERROR_STATUS).find(([, s]) => s === status)?.[0] ?? 'invalid_request') as ErrorCode;
      return send(reply, code, fastifyError.message);
    }
    request.log.error({ err }, 'unhandled error');
    return send(reply, 'internal_error', 'Internal server error');
  });

  app.setNotFoundHandler((request, reply) =>
    send(reply, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`),
  );
}
