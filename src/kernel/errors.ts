/**
 * Typed domain errors. Services throw these; the HTTP layer maps them to the error
 * envelope in one place (http/error-handler.ts) using the registry below.
 */
import { ERROR_STATUS, type ErrorCode } from '#client/error-codes.js';

export { ERROR_STATUS, type ErrorCode };

export interface FieldProblem {
  field: string;
  message: string;
  /** Where the field is: body, querystring, params or headers. */
  in?: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: unknown, headers: Record<string, string> = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export class InvalidRequest extends AppError {
  constructor(message: string, details?: FieldProblem[]) {
    super('invalid_request', message, details);
  }

  /** One bad field: the common case for service-level validation. */
  static field(field: string, message: string): InvalidRequest {
    return new InvalidRequest(`${field}: ${message}`, [{ field, message }]);
  }
}

export class Unauthorized extends AppError {
  constructor(message = 'Missing or invalid credentials') {
    // RFC 9110: a 401 names the scheme it wants.
    super('unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer realm="switchboard"' });
  }
}

export class Forbidden extends AppError {
  constructor(message = 'You are not allowed to do this') {
    super('forbidden', message);
  }
}

export class NotFound extends AppError {
  constructor(what: string, id?: string) {
    super('not_found', id === undefined ? `${what} not found` : `${what} '${id}' not found`);
  }
}

export class MethodNotAllowed extends AppError {
  constructor(message: string, allow: string[]) {
    super('method_not_allowed', message, undefined, { Allow: allow.join(', ') });
  }
}

export class Conflict extends AppError {
  constructor(message: string, details?: unknown) {
    super('conflict', message, details);
  }
}

export class PreconditionFailed extends AppError {
  constructor(message: string) {
    super('precondition_failed', message);
  }
}

export class PayloadTooLarge extends AppError {
  constructor(message: string) {
    super('payload_too_large', message);
  }
}

export class UnsupportedMediaType extends AppError {
  constructor(message: string) {
    super('unsupported_media_type', message);
  }
}

export class RangeNotSatisfiable extends AppError {
  constructor(size: number) {
    super('range_not_satisfiable', `The requested range is outside the ${size} bytes of the content`, undefined, {
      'Content-Range': `bytes */${size}`,
    });
  }
}

export class RateLimited extends AppError {
  constructor(retryAfterSeconds: number, message = `Rate limit exceeded; retry in ${retryAfterSeconds} s`) {
    super('rate_limited', message, undefined, {
      'Retry-After': String(retryAfterSeconds),
    });
  }
}

export class ServiceUnavailable extends AppError {
  constructor(message: string, retryAfterSeconds?: number) {
    super('service_unavailable', message, undefined, retryAfterSeconds === undefined ? {} : { 'Retry-After': String(retryAfterSeconds) });
  }
}

export class InsufficientStorage extends AppError {
  constructor(message: string) {
    super('insufficient_storage', message);
  }
}
