"""The errors every client method raises: one class per error code of the API's envelope."""

from __future__ import annotations

from typing import Any


class SwitchboardError(Exception):
    """An error answer of the server (its envelope's code, message and details), or a request that
    never got one (``status`` 0, code ``connection_error``).

    ``request_id`` is the server's ``X-Request-ID`` of the request, to find it in the server's logs.
    """

    code_name = "http_error"

    def __init__(self, status: int, code: str, message: str, details: Any = None, request_id: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.request_id = request_id

    def __str__(self) -> str:
        where = f", request {self.request_id}" if self.request_id else ""
        return f"{self.message} ({self.status} {self.code}{where})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, message={self.message!r}, request_id={self.request_id!r})"


class InvalidRequest(SwitchboardError):
    """400: a parameter or the body is invalid; ``details`` lists each bad field."""

    code_name = "invalid_request"


class Unauthorized(SwitchboardError):
    """401: no credentials, or wrong ones."""

    code_name = "unauthorized"


class Forbidden(SwitchboardError):
    """403: the credentials may not do this."""

    code_name = "forbidden"


class NotFound(SwitchboardError):
    """404: no such resource (or not visible to these credentials)."""

    code_name = "not_found"


class MethodNotAllowed(SwitchboardError):
    code_name = "method_not_allowed"


class RequestTimeout(SwitchboardError):
    code_name = "request_timeout"


class Conflict(SwitchboardError):
    """409: the resource's state does not allow this (or it exists already)."""

    code_name = "conflict"


class PreconditionFailed(SwitchboardError):
    """412: an If-Match did not match."""

    code_name = "precondition_failed"


class PayloadTooLarge(SwitchboardError):
    code_name = "payload_too_large"


class UnsupportedMediaType(SwitchboardError):
    code_name = "unsupported_media_type"


class RangeNotSatisfiable(SwitchboardError):
    code_name = "range_not_satisfiable"


class RateLimited(SwitchboardError):
    """429: too many requests; ``retry_after`` is the seconds the server asks to wait (or None)."""

    code_name = "rate_limited"

    def __init__(self, status: int, code: str, message: str, details: Any = None, request_id: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(status, code, message, details, request_id)
        self.retry_after = retry_after


class InternalError(SwitchboardError):
    code_name = "internal_error"


class ServiceUnavailable(SwitchboardError):
    """503: the server is starting, stopping or overloaded; idempotent requests were retried."""

    code_name = "service_unavailable"


class InsufficientStorage(SwitchboardError):
    code_name = "insufficient_storage"


class ConnectionFailed(SwitchboardError):
    """No answer at all: the server could not be reached or the connection broke (``status`` 0)."""

    code_name = "connection_error"


ERRORS_BY_CODE: dict[str, type[SwitchboardError]] = {
    cls.code_name: cls
    for cls in (
        InvalidRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        RequestTimeout,
        Conflict,
        PreconditionFailed,
        PayloadTooLarge,
        UnsupportedMediaType,
        RangeNotSatisfiable,
        RateLimited,
        InternalError,
        ServiceUnavailable,
        InsufficientStorage,
        ConnectionFailed,
    )
}


def error_for(status: int, code: str, message: str, details: Any = None, request_id: str | None = None, retry_after: float | None = None) -> SwitchboardError:
    """The error of this code's class (SwitchboardError for a code this version does not know)."""
    cls = ERRORS_BY_CODE.get(code, SwitchboardError)
    if cls is RateLimited:
        return RateLimited(status, code, message, details, request_id, retry_after)
    return cls(status, code, message, details, request_id)
