"""The Switchboard client: one method per API operation (generated in _operations.py), over
keep-alive connections, with retries, typed errors and streamed bodies."""

from __future__ import annotations

import copy
import email.utils
import hashlib
import http.client
import io
import json as jsonlib
import logging
import os
import random
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Callable

from ._base import Domain, Operation, Page, Paged, StreamedResponse
from ._errors import ConnectionFailed, SwitchboardError, error_for
from ._operations import DOMAINS, OPERATIONS, ArtifactsConfirmUploadData, ArtifactsOperations, ClientDomains
from ._payload_refs import DEFAULT_INLINE_PAYLOAD_BYTES, Messaging
from ._signing import EMPTY_SHA256, Ed25519Signer

logger = logging.getLogger("switchboard")

# GET, PUT and DELETE repeat safely; POST and PATCH may not (a 5xx may come after the work was done),
# unless the body carries an idempotency key: the server answers a repeat with the first result.
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE"})
RETRY_STATUSES = frozenset({502, 503, 504})
PAGE_SIZE = 100
CHUNK = 64 * 1024


@dataclass
class _Body:
    """What a request sends: chunks (replayable when ``replay`` is set), their length if known."""

    chunks: Callable[[], Iterator[bytes]]
    length: int | None
    content_type: str | None
    replayable: bool
    sha256: str = EMPTY_SHA256


def _bytes_body(data: bytes, content_type: str | None) -> _Body:
    return _Body(lambda: iter((data,)), len(data), content_type, True, hashlib.sha256(data).hexdigest())


def _file_chunks(file: IO[bytes], start: int | None) -> Callable[[], Iterator[bytes]]:
    def chunks() -> Iterator[bytes]:
        if start is not None:
            file.seek(start)
        while chunk := file.read(CHUNK):
            yield chunk

    return chunks


def _seekable_start(file: IO[bytes]) -> tuple[int, int] | None:
    """(start, length) of a seekable file from where it stands, or None."""
    try:
        if not file.seekable():
            return None
        start = file.tell()
        end = file.seek(0, os.SEEK_END)
        file.seek(start)
        return start, end - start
    except (AttributeError, OSError, ValueError):
        return None


def _content_body(content: Any, content_type: str | None) -> _Body:
    if isinstance(content, str):
        return _bytes_body(content.encode(), content_type or "text/plain; charset=utf-8")
    if isinstance(content, (bytes, bytearray, memoryview)):
        return _bytes_body(bytes(content), content_type or "application/octet-stream")
    if hasattr(content, "read"):
        position = _seekable_start(content)
        if position is not None:
            start, length = position
            return _Body(_file_chunks(content, start), length, content_type or "application/octet-stream", True)
        return _Body(_file_chunks(content, None), None, content_type or "application/octet-stream", False)
    if isinstance(content, Iterable):
        iterator = iter(content)
        return _Body(lambda: iterator, None, content_type or "application/octet-stream", False)
    raise TypeError(f"content must be bytes, str, a binary file or an iterable of bytes, not {type(content).__name__}")


def _multipart_body(file: Any, name: str | None, filename: str | None, content_type: str | None, metadata: Any) -> _Body:
    """A multipart form with the part ``file`` last, streamed from the file object."""
    boundary = f"switchboard-{uuid.uuid4().hex}"
    filename = filename or name or os.path.basename(getattr(file, "name", "") or "") or "file"
    head = io.BytesIO()
    for field, value in (("name", name), ("content_type", content_type), ("metadata", None if metadata is None else jsonlib.dumps(metadata))):
        if value is not None:
            head.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"\r\n\r\n{value}\r\n'.encode())
    quoted = filename.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "")
    head.write(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{quoted}"\r\n'.encode())
    head.write(f"Content-Type: {content_type or 'application/octet-stream'}\r\n\r\n".encode())
    prefix = head.getvalue()
    suffix = f"\r\n--{boundary}--\r\n".encode()
    inner = _content_body(file, None)
    length = None if inner.length is None else len(prefix) + inner.length + len(suffix)

    def chunks() -> Iterator[bytes]:
        yield prefix
        yield from inner.chunks()
        yield suffix

    return _Body(chunks, length, f"multipart/form-data; boundary={boundary}", inner.replayable)


def _hashed(body: _Body) -> _Body:
    """The body with its SHA-256 (which a signature covers): a second pass over a replayable body,
    else spooled to a temporary file first (a stream is never held in memory)."""
    if body.sha256 != EMPTY_SHA256 or body.length == 0:
        return body
    if not body.replayable:
        spool: IO[bytes] = tempfile.TemporaryFile()
        for chunk in body.chunks():
            spool.write(chunk)
        length = spool.tell()
        body = _Body(_file_chunks(spool, 0), length, body.content_type, True)
    digest = hashlib.sha256()
    for chunk in body.chunks():
        digest.update(chunk)
    body.sha256 = digest.hexdigest()
    return body


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return jsonlib.dumps(value, separators=(",", ":"))
    return str(value)


def _retry_after_seconds(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


class _Connections:
    """One keep-alive connection per thread (an http.client connection serves one request at a time)."""

    def __init__(self, scheme: str, host: str, port: int | None) -> None:
        self.scheme, self.host, self.port = scheme, host, port
        self._local = threading.local()

    def new(self, timeout: float) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def get(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it was used before (a reused one may have gone stale)."""
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None or connection.sock is None:
            connection = connection or self.new(timeout)
            connection.timeout = timeout
            self._local.connection = connection
            return connection, False
        connection.sock.settimeout(timeout)
        return connection, True

    def drop(self) -> None:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


class Artifacts(ArtifactsOperations):
    """The artifacts operations, and uploads and downloads that stream."""

    def upload_stream(
        self,
        file: BinaryIO | bytes,
        *,
        name: str,
        content_type: str = "application/octet-stream",
        size: int | None = None,
        sha256: str | None = None,
        metadata: dict[str, Any] | None = None,
        expires_in: int | None = None,
    ) -> ArtifactsConfirmUploadData:
        """Uploads bytes of any size without holding them in memory, with either kind of
        credentials: an upload URL is created, the bytes are PUT to it as they are read, and the
        upload is confirmed. ``size`` defaults to what remains of a seekable file."""
        if size is None:
            if isinstance(file, (bytes, bytearray)):
                size = len(file)
            else:
                position = _seekable_start(file)
                if position is None:
                    raise ValueError("size is required for a file that cannot seek")
                size = position[1]
        fields: dict[str, Any] = {"name": name, "content_type": content_type, "size_bytes": size}
        if sha256 is not None:
            fields["sha256"] = sha256
        if metadata is not None:
            fields["metadata"] = metadata
        if expires_in is not None:
            fields["expires_in"] = expires_in
        upload = self.create_upload_url(**fields)  # type: ignore[typeddict-item]
        # The URL's query carries its own proof (expires, signature): the PUT needs no credentials.
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(upload["url"]).query))
        self.put_upload(upload_id=upload["upload_id"], content=file, content_type=content_type, **query)  # type: ignore[typeddict-item]
        return self.confirm_upload(upload_id=upload["upload_id"])

    def download_to(self, artifact_id: str, file: BinaryIO, *, version: int | None = None) -> int:
        """Writes a version's bytes (default: the current one) to a binary file as they arrive; returns the count."""
        arguments: dict[str, Any] = {"artifact_id": artifact_id}
        if version is not None:
            arguments["version"] = version
        written = 0
        with self.download(**arguments) as response:  # type: ignore[typeddict-item]
            for chunk in response.iter_bytes():
                file.write(chunk)
                written += len(chunk)
        return written


class Switchboard(ClientDomains):
    """A client of one Switchboard server.

    ``Switchboard(url, api_key=...)`` authenticates with an API key; ``Switchboard(url,
    agent_id=..., private_key=pem)`` signs each request as the agent with its Ed25519 key (needs
    the optional ``cryptography`` package); with neither, only the public operations work.

    Each domain of the API is an attribute (``client.messaging``, ``client.coordination``…) with one
    method per operation, named after its operationId in snake case; path, query and body fields are
    keyword arguments; a method returns the answer's ``data``, a list operation a ``Paged`` iterable.
    Errors raise a ``SwitchboardError`` subclass (``NotFound``, ``RateLimited``…).

    ``messaging.send`` and ``send_batch`` upload a payload whose JSON is over
    ``inline_payload_bytes`` (default 256 KiB; None: never) as an artifact and send its
    ``payload_ref``; ``hydrate(message)`` fetches what a received message carries by reference.
    """

    artifacts: Artifacts  # type: ignore[assignment]
    messaging: Messaging  # type: ignore[assignment]

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        agent_id: str | None = None,
        private_key: str | bytes | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        max_backoff: float = 5.0,
        headers: dict[str, str] | None = None,
        inline_payload_bytes: float | None = DEFAULT_INLINE_PAYLOAD_BYTES,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"url must be http(s)://host[:port], not {url!r}")
        if private_key is not None and agent_id is None:
            raise ValueError("private_key needs agent_id")
        if api_key is not None and private_key is not None:
            raise ValueError("give api_key or agent_id with private_key, not both")
        self.url = url.rstrip("/")
        self._prefix = parsed.path.rstrip("/")
        self._connections = _Connections(parsed.scheme, parsed.hostname, parsed.port)
        self._api_key = api_key
        self._signer = Ed25519Signer(agent_id, private_key) if agent_id is not None and private_key is not None else None
        self.agent_id = agent_id
        self.timeout = timeout
        self.retries = retries
        self.max_backoff = max_backoff
        self._headers = dict(headers or {})
        self.inline_payload_bytes = inline_payload_bytes
        self._bind()

    def _bind(self) -> None:
        own: dict[str, type[Domain]] = {"artifacts": Artifacts, "messaging": Messaging}
        for name, cls in DOMAINS.items():
            setattr(self, name, own.get(name, cls)(self, name, OPERATIONS[name]))

    def with_options(self, *, headers: dict[str, str] | None = None, timeout: float | None = None, retries: int | None = None) -> Switchboard:
        """A copy that sends these extra headers (If-Match, Range…) or uses another timeout or retry
        count; it shares this client's connections."""
        clone = copy.copy(self)
        clone._headers = {**self._headers, **(headers or {})}
        if timeout is not None:
            clone.timeout = timeout
        if retries is not None:
            clone.retries = retries
        clone._bind()
        return clone

    def close(self) -> None:
        """Closes this thread's connection (others close with their threads)."""
        self._connections.drop()

    def __enter__(self) -> Switchboard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- operations ---------------------------------------------------------------------------

    def _invoke(self, operation: Operation, arguments: dict[str, Any]) -> Any:
        arguments = dict(arguments)
        path_values = {}
        for name in operation.path_params:
            if name not in arguments:
                raise TypeError(f"{operation.operation_id}: missing path parameter '{name}'")
            path_values[name] = arguments.pop(name)
        query = {name: arguments.pop(name) for name in operation.query_params if name in arguments}
        body: _Body | None = None
        if operation.body == "json":
            unknown = [name for name in arguments if name not in operation.body_fields]
            if unknown:
                raise TypeError(f"{operation.operation_id}: unexpected keyword argument(s) {', '.join(unknown)}")
            body = _bytes_body(jsonlib.dumps(arguments, separators=(",", ":")).encode(), "application/json")
        elif operation.body == "multipart":
            if "file" not in arguments:
                raise TypeError(f"{operation.operation_id}: missing keyword argument 'file'")
            body = _multipart_body(
                arguments.pop("file"), arguments.pop("name", None), arguments.pop("filename", None), arguments.pop("content_type", None), arguments.pop("metadata", None)
            )
        elif operation.body == "raw":
            content_type = arguments.pop("content_type", None)
            if "json" in arguments:
                body = _bytes_body(jsonlib.dumps(arguments.pop("json"), separators=(",", ":")).encode(), content_type or "application/json")
            elif "content" in arguments:
                body = _content_body(arguments.pop("content"), content_type)
        if "path" in operation.path_params:
            # A hook (its path a wildcard) takes any query, which becomes the event's query.
            query.update(arguments.pop("params", None) or {})
        if operation.body != "json" and arguments:
            raise TypeError(f"{operation.operation_id}: unexpected keyword argument(s) {', '.join(arguments)}")
        path = self._path(operation, path_values)
        idempotent = operation.method in IDEMPOTENT or (operation.body == "json" and "idempotency_key" in (arguments or {}))
        timeout = self.timeout
        if operation.operation_id == "messaging_receive" and "timeout" in query:
            # A long poll is held open by the server for `timeout` seconds.
            timeout = max(timeout, float(query["timeout"]) + 10)

        if operation.streamed:
            return self._request(operation.method, path, query, body, authenticate=not operation.public, idempotent=idempotent, timeout=timeout, stream=True)
        if operation.paged:
            limit = int(query.pop("limit", PAGE_SIZE))
            offset = int(query.pop("offset", 0))
            cursor = query.pop("cursor", None)

            def fetch(page_limit: int, page_offset: int, page_cursor: str | None) -> Page[Any]:
                window: dict[str, Any] = {"limit": page_limit, "offset": page_offset} if page_cursor is None else {"limit": page_limit, "cursor": page_cursor}
                envelope = self._request(operation.method, path, {**query, **window}, None, authenticate=not operation.public, idempotent=True, timeout=timeout)
                data = envelope.get("data")
                items = data.get(operation.items_key, []) if operation.items_key and isinstance(data, dict) else data or []
                meta = envelope.get("meta") or {}
                return Page(
                    list(items),
                    int(meta.get("total", len(items))),
                    int(meta.get("limit", page_limit)),
                    int(meta.get("offset", page_offset)),
                    bool(meta.get("total_estimated", False)),
                    meta.get("next_cursor"),
                )

            return Paged(fetch, limit, offset, cursor)
        envelope = self._request(operation.method, path, query, body, authenticate=not operation.public, idempotent=idempotent, timeout=timeout)
        return envelope.get("data")

    def _path(self, operation: Operation, values: dict[str, Any]) -> str:
        path = operation.path
        for name, value in values.items():
            # `path` is a hook's wildcard, the rest of the URL: it keeps its slashes.
            encoded = urllib.parse.quote(str(value), safe="/" if name == "path" else "")
            path = path.replace("{" + name + "}", encoded)
        return path

    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, json: Any = None, content: Any = None, content_type: str | None = None) -> Any:
        """One authenticated request to a path the operation table does not know; returns the
        envelope (``data`` and ``meta``) of a JSON answer, else the bytes."""
        body = _bytes_body(jsonlib.dumps(json).encode(), "application/json") if json is not None else _content_body(content, content_type) if content is not None else None
        return self._request(method.upper(), path, query or {}, body, authenticate=True, idempotent=method.upper() in IDEMPOTENT, timeout=self.timeout)

    # -- transport ----------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        query: dict[str, Any],
        body: _Body | None,
        *,
        authenticate: bool,
        idempotent: bool,
        timeout: float,
        stream: bool = False,
    ) -> Any:
        pairs = [(key, _query_value(value)) for key, value in query.items() if value is not None]
        path_with_query = self._prefix + path + (f"?{urllib.parse.urlencode(pairs)}" if pairs else "")
        signer = self._signer if authenticate else None
        if body is not None and signer is not None:
            body = _hashed(body)
        headers = {"Accept": "application/json", "User-Agent": "switchboard-python", **self._headers}
        if body is not None:
            if body.content_type:
                headers["Content-Type"] = body.content_type
            if signer is not None and body.content_type != "application/json":
                headers["X-Content-SHA256"] = body.sha256
        replayable = body is None or body.replayable
        attempt = 0
        while True:
            credentials: dict[str, str] = {}
            if authenticate:
                if signer is not None:
                    credentials = signer.headers(method, path_with_query, body.sha256 if body is not None else EMPTY_SHA256)
                elif self._api_key is not None:
                    credentials = {"Authorization": f"Bearer {self._api_key}"}
            connection, reused = (self._connections.new(timeout), False) if stream else self._connections.get(timeout)
            try:
                response = self._exchange(connection, method, path_with_query, {**headers, **credentials}, body)
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if not stream:
                    self._connections.drop()
                # A kept-alive connection the server closed while idle fails on first use: that
                # request never reached it, so it is sent again on a fresh one, whatever its method.
                if reused and replayable and isinstance(error, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)):
                    continue
                if idempotent and replayable and attempt < self.retries:
                    self._sleep(attempt, None, method, path_with_query, error)
                    attempt += 1
                    continue
                raise ConnectionFailed(0, "connection_error", f"{method} {path_with_query}: {type(error).__name__}: {error}") from error
            status = response.status
            if 200 <= status < 300 or status == 304:
                if stream:
                    return StreamedResponse(response, connection)
                raw = response.read()
                if "json" in (response.getheader("content-type") or "") and raw:
                    return jsonlib.loads(raw)
                return {"data": raw}
            raw = response.read()
            if stream:
                connection.close()
            retry_after = _retry_after_seconds(response.getheader("retry-after"))
            # 429 is refused before any work is done, so every method may repeat it; 5xx only idempotent ones.
            if replayable and attempt < self.retries and (status == 429 or (status in RETRY_STATUSES and idempotent)):
                self._sleep(attempt, retry_after, method, path_with_query, status)
                attempt += 1
                continue
            raise self._error(status, raw, response, retry_after)

    def _exchange(self, connection: http.client.HTTPConnection, method: str, path_with_query: str, headers: dict[str, str], body: _Body | None) -> http.client.HTTPResponse:
        connection.putrequest(method, path_with_query, skip_accept_encoding=True)
        chunked = body is not None and body.length is None
        for key, value in headers.items():
            connection.putheader(key, value)
        if body is None:
            if method in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", "0")
        elif chunked:
            connection.putheader("Transfer-Encoding", "chunked")
        else:
            connection.putheader("Content-Length", str(body.length))
        connection.endheaders()
        if body is not None:
            for chunk in body.chunks():
                if not chunk:
                    continue
                if chunked:
                    connection.send(f"{len(chunk):X}\r\n".encode() + chunk + b"\r\n")
                else:
                    connection.send(chunk)
            if chunked:
                connection.send(b"0\r\n\r\n")
        return connection.getresponse()

    def _sleep(self, attempt: int, retry_after: float | None, method: str, path: str, cause: object) -> None:
        # Exponential backoff with jitter: 0.1 s, 0.2 s, 0.4 s… (half to full), capped; a server's Retry-After wins.
        delay = retry_after if retry_after is not None else min(self.max_backoff, 0.1 * 2**attempt) * (0.5 + random.random() / 2)
        logger.debug("retrying %s %s in %.2f s (attempt %d): %s", method, path, delay, attempt + 1, cause)
        time.sleep(delay)

    @staticmethod
    def _error(status: int, raw: bytes, response: http.client.HTTPResponse, retry_after: float | None) -> SwitchboardError:
        envelope: Any = None
        try:
            envelope = jsonlib.loads(raw)
        except ValueError:
            pass
        error = envelope.get("error") if isinstance(envelope, dict) else None
        meta = envelope.get("meta") if isinstance(envelope, dict) else None
        request_id = (meta or {}).get("request_id") if isinstance(meta, dict) else None
        request_id = request_id or response.getheader("x-request-id")
        if isinstance(error, dict):
            return error_for(status, str(error.get("code", "http_error")), str(error.get("message", "")), error.get("details"), request_id, retry_after)
        return error_for(status, "http_error", raw.decode("utf-8", "replace")[:500] or response.reason, None, request_id, retry_after)


__all__ = ["Switchboard", "Artifacts", "Domain"]
