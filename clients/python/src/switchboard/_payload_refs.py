"""Large payloads by reference (claim check): hydrating what a message carries by reference, and
sends that upload a large payload as an artifact and send its ``payload_ref``."""

from __future__ import annotations

import hashlib
import json
import sys
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from ._errors import ConnectionFailed, SwitchboardError, error_for
from ._operations import MessagingOperations, MessagingSendArgs, MessagingSendBatchArgs, MessagingSendBatchData, MessagingSendData

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Unpack
    else:  # pragma: no cover
        from typing_extensions import Unpack

#: The server's default ``SWITCHBOARD_INLINE_PAYLOAD_BYTES``: payloads larger than this travel by reference.
DEFAULT_INLINE_PAYLOAD_BYTES = 256 * 1024

_CHUNK = 64 * 1024
# The URL is the server's, reached as the client reaches it: directly, whatever proxy the environment names.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

M = TypeVar("M", bound=dict[str, Any])


class PayloadRef(TypedDict):
    """A payload (or step input, or output) stored as an artifact: a signed URL that needs no API key, and what its bytes are."""

    artifact_id: str
    url: str
    size_bytes: int
    sha256: str


class PayloadRefMismatchError(Exception):
    """The referenced payload's bytes did not match its reference (size or sha256)."""


def _is_ref(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("url"), str) and isinstance(value.get("sha256"), str)


def fetch_payload_ref(ref: PayloadRef | dict[str, Any], *, timeout: float = 30.0) -> Any:
    """The value a reference stands for: its URL's JSON text, checked against the reference's size
    and sha256 (``PayloadRefMismatchError``). The URL is signed: no credentials are sent."""
    artifact_id, expected = ref.get("artifact_id"), int(ref["size_bytes"])
    request = urllib.request.Request(ref["url"], headers={"Accept": "application/json", "User-Agent": "switchboard-python"})
    digest, chunks, size = hashlib.sha256(), [], 0
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            while chunk := response.read(_CHUNK):
                size += len(chunk)
                # Read no further than the reference says there is: a wrong size fails early.
                if size > expected:
                    raise PayloadRefMismatchError(f"payload reference {artifact_id}: more than the {expected} bytes expected")
                digest.update(chunk)
                chunks.append(chunk)
    except urllib.error.HTTPError as error:
        raise _http_error(artifact_id, error) from error
    except (urllib.error.URLError, OSError) as error:
        raise ConnectionFailed(0, "connection_error", f"payload reference {artifact_id}: GET failed: {error}") from error
    if size != expected:
        raise PayloadRefMismatchError(f"payload reference {artifact_id}: {size} bytes, expected {expected}")
    if digest.hexdigest() != ref["sha256"]:
        raise PayloadRefMismatchError(f"payload reference {artifact_id}: sha256 mismatch")
    return json.loads(b"".join(chunks).decode("utf-8"))


def _http_error(artifact_id: Any, error: urllib.error.HTTPError) -> SwitchboardError:
    raw = error.read()
    try:
        body = json.loads(raw).get("error") or {}
    except (ValueError, AttributeError):
        body = {}
    code = str(body.get("code", "http_error")) if isinstance(body, dict) else "http_error"
    message = str(body.get("message", "")) if isinstance(body, dict) else ""
    return error_for(error.code, code, f"payload reference {artifact_id}: GET answered {error.code}{': ' + message if message else ''}")


def hydrate(message: M, *, timeout: float = 30.0) -> M:
    """The message with what travelled by reference fetched in: ``payload`` from ``payload_ref``,
    and a plan step's ``payload["input"]`` from ``payload["input_ref"]``, each checked against its
    size and sha256. A message with no reference is returned as it is (no request). The agent
    worker hands its handlers hydrated messages; call it on messages you receive yourself
    (``client.messaging.receive``). The message given is not changed."""
    hydrated = message
    if message.get("payload") is None and _is_ref(message.get("payload_ref")):
        hydrated = {**hydrated, "payload": fetch_payload_ref(message["payload_ref"], timeout=timeout)}  # type: ignore[assignment]
    payload = hydrated.get("payload")
    if isinstance(payload, dict) and payload.get("input", 0) is None and _is_ref(payload.get("input_ref")):
        hydrated = {**hydrated, "payload": {**payload, "input": fetch_payload_ref(payload["input_ref"], timeout=timeout)}}  # type: ignore[assignment]
    return hydrated


def oversized_json(payload: Any, limit: float | None) -> bytes | None:
    """The UTF-8 JSON text of a payload when it is larger than ``limit`` bytes (to send by reference), else None."""
    if limit is None:
        return None
    value = {} if payload is None else payload
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        # Bytes are at most 3 per character: most payloads are decided without encoding them.
        if len(text) * 3 <= limit:
            return None
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON.stringify does
        data = json.dumps(value, separators=(",", ":")).encode("ascii")
    return data if len(data) > limit else None


class Messaging(MessagingOperations):
    """The messaging operations, whose sends upload a payload over the client's
    ``inline_payload_bytes`` as an artifact and send its ``payload_ref``."""

    def _offload(self, message: dict[str, Any]) -> dict[str, Any]:
        data = oversized_json(message.get("payload"), self._client.inline_payload_bytes) if "payload_ref" not in message else None
        if data is None:
            return message
        artifact = self._client.artifacts.upload_stream(
            data,
            name="payload.json",
            content_type="application/json",
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            # Deleted with the message under retention, as the server's own offloads are.
            metadata={"claim_check": True},
        )
        rest = {key: value for key, value in message.items() if key != "payload"}
        return {**rest, "payload_ref": {"artifact_id": artifact["id"]}}

    def send(self, **arguments: Unpack[MessagingSendArgs]) -> MessagingSendData:
        return super().send(**self._offload(dict(arguments)))  # type: ignore[arg-type]

    def send_batch(self, **arguments: Unpack[MessagingSendBatchArgs]) -> MessagingSendBatchData:
        messages = [self._offload(dict(message)) for message in arguments.get("messages", [])]
        return super().send_batch(**{**arguments, "messages": messages})  # type: ignore[arg-type]
