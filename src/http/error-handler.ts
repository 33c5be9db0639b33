import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { storageFault, type StorageFullness } from '../db/faults.js';
import { AppError, ERROR_STATUS, InsufficientStorage, ServiceUnavailable, type ErrorCode, type FieldProblem } from '../kernel/errors.js';
import { newId } from '../kernel/ids.js';
import { ajvFieldProblems, type AjvIssue } from '../kernel/validation-problems.js';
import { closeAfterAnswer, LINGER_MS } from './lingering-close.js';
import { DATA_HEADERS, securityHeadersFor } from './security-headers.js';

/** ajv's findings about a request as field problems, each saying where the field is (body, querystring…). */
function fieldProblems(issues: AjvIssue[], location: string): (FieldProblem & { in: string })[] {
  return ajvFieldProblems(issues, '').map((problem) => ({ field: problem.field || location, in: location, message: problem.message }));
}

/** ajv's findings about a request (HTTP, or an MCP tool's arguments) as the invalid_request error the client gets. */
export function validationError(issues: AjvIssue[], location: string): AppError {
  const details = fieldProblems(issues, location);
  return new AppError('invalid_request', `Invalid request: ${details.map((d) => `${d.field} ${d.message}`).join('; ')}`, details);
}

// Fastify's own client errors, by code, with the envelope code they become.
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_request',
  FST_ERR_VALIDATION: 'invalid_request',
  FST_ERR_BAD_URL: 'invalid_request',
  FST_ERR_MAX_PARAM_LENGTH: 'uri_too_long',
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
      storage.markFull();
      return new InsufficientStorage('No storage space is left for this write; reads still work');
    default:
      return err;
  }
}

/** An error as the envelope answers it. */
interface Answer {
  code: ErrorCode;
  message: string;
  details?: unknown;
  headers?: Record<string, string>;
}

/** What the audit log hears of each error answer (http/plugins/audit.ts): denials, and changes that failed. */
export type ErrorAudit = (request: FastifyRequest, status: number) => void | Promise<void>;

/**
 * The one place errors become HTTP responses. Typed errors keep their code and
 * message; validation errors list every bad field; a database out of reach is a 503 with
 * Retry-After and a full disk a 507 (noted in `storage` for /readyz); anything else unexpected
 * is logged and answered with a bare 500 that leaks nothing. Each answer is told to `audit`
 * first (a 401 or 403 is a denial; a change that rolled back is recorded as failed before the
 * client hears of it).
 */
export function installErrorHandling(app: FastifyInstance, storage: StorageFullness, audit: ErrorAudit): void {
  function answerOf(thrown: FastifyError | AppError, request: FastifyRequest): Answer {
    const err = thrown instanceof AppError ? thrown : typedStorageFault(thrown, storage);
    if (err instanceof AppError) {
      if (err !== thrown) request.log.error({ err: thrown }, 'storage failure');
      else if (err.status >= 500) request.log.error({ err }, 'request failed');
      return { code: err.code, message: err.message, details: err.details, headers: err.headers };
    }
    const fastifyError = err as FastifyError & { validation?: AjvIssue[]; validationContext?: string };
    if (fastifyError.validation) {
      const invalid = validationError(fastifyError.validation, fastifyError.validationContext ?? 'body');
      return { code: invalid.code, message: invalid.message, details: invalid.details };
    }
    const mapped = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
    if (mapped) return { code: mapped, message: fastifyError.message };
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const code = (Object.entries(ERROR_STATUS).find(([, s]) => s === status)?.[0] ?? 'invalid_request') as ErrorCode;
      return { code, message: fastifyError.message };
    }
    request.log.error({ err }, 'unhandled error');
    return { code: 'internal_error', message: 'Internal server error' };
  }

  app.setErrorHandler((thrown: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const { code, message, details, headers } = answerOf(thrown, request);
    const answer = () => send(reply, code, message, details, headers);
    const audited = audit(request, ERROR_STATUS[code]);
    if (!audited) return answer();
    return audited.then(answer, (err: unknown) => {
      request.log.error({ err }, 'could not record the failed change in the audit log');
      return answer();
    });
  });

  app.setNotFoundHandler((request, reply) => send(reply, 'not_found', `No route for ${request.method} ${request.url.split('?')[0]}`));
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot read (a bad %-escape, a path parameter
 * over the length limit) is answered before any hook runs, so the request id and the security
 * headers are set here.
 */
export function answerFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('X-Request-ID', request.id);
  reply.headers(securityHeadersFor(request.url));
  return request.server.errorHandler(err, request, reply);
}

// Node's parser errors, by code, as the envelope answers them; any other is a 400.
const CLIENT_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { code: 'header_fields_too_large', message: 'The request headers are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'request_timeout', message: 'The request was not received in time' },
};
const MALFORMED_REQUEST = { code: 'invalid_request', message: 'The request is not valid HTTP' } as const;

/**
 * The node server's `clientError`: a request its parser could not read (headers too large,
 * malformed HTTP, too slow) gets the envelope, a request id and `Connection: close`, since
 * the rest of what the client sent cannot be read. Fastify's default answer had none of
 * them, and a keep-alive client sent its next request into the closed socket (ECONNRESET).
 * As in closeAfterAnswer, what the client still sends is read (the parser refuses it again,
 * which lands here with the answer already sent) until it closes or LINGER_MS pass: closing
 * at once, with its bytes unread, would reset the connection and lose the answer.
 */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded) return;
  // An answer already under way (a request timeout mid-response) cannot be followed by another.
  if ((socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage?.headersSent) return void socket.destroy();
  const { code, message } = CLIENT_ERRORS[err.code ?? ''] ?? MALFORMED_REQUEST;
  const status = ERROR_STATUS[code];
  const requestId = newId('req');
  const body = JSON.stringify({ error: { code, message }, meta: { request_id: requestId } });
  const head = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-ID: ${requestId}`,
    'Connection: close',
    ...Object.entries(DATA_HEADERS).map(([name, value]) => `${name}: ${value}`),
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
