/** An error envelope from the server, thrown by every client method. */
export class SwitchboardError extends Error {
  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The envelope's `error.code` (`not_found`, `conflict`…), or `http_error` when there was no envelope. */
    readonly code: string,
    message: string,
    /** The request's `meta.request_id` / `X-Request-ID`, for the server's logs. */
    readonly requestId: string | undefined,
    /** The envelope's `error.details` (for `invalid_request`: each bad field). */
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'SwitchboardError';
  }
}
