/**
 * Typed domain errors. Services throw these; the HTTP layer maps them to the error
 * envelope in one place (http/error-handler.ts) using the registry below.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  precondition_failed: 412,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  rate_limited: 429,
  header_fields_too_large: 431,
  internal_error: 500,
  service_unavailable: 503,
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

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
