/** Every error code of the API's envelope (`error.code`) with its HTTP status: the server maps its typed errors with it, the client the channel's frame errors. */
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
