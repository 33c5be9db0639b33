"""The Switchboard SDK for Python: a client with one method per API operation, and an agent worker.

    from switchboard import Switchboard
    client = Switchboard("http://127.0.0.1:8080", api_key="sk_...")
    run = client.coordination.start_run(plan_id="triage", input={"ticket": 42})
"""

from ._base import Operation, Page, Paged, StreamedResponse
from ._client import Artifacts, Switchboard
from ._errors import (
    ConnectionFailed,
    Conflict,
    Forbidden,
    InsufficientStorage,
    InternalError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    RangeNotSatisfiable,
    RateLimited,
    RequestTimeout,
    ServiceUnavailable,
    SwitchboardError,
    Unauthorized,
    UnsupportedMediaType,
)
from ._operations import OPERATIONS
from ._payload_refs import DEFAULT_INLINE_PAYLOAD_BYTES, Messaging, PayloadRef, PayloadRefMismatchError, fetch_payload_ref, hydrate
from ._signing import Ed25519Signer, generate_keypair
from ._step import StepContext
from .agent import Agent, PermanentError, WithUsage, current_traceparent, with_usage

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Artifacts",
    "DEFAULT_INLINE_PAYLOAD_BYTES",
    "Conflict",
    "ConnectionFailed",
    "Ed25519Signer",
    "Forbidden",
    "InsufficientStorage",
    "InternalError",
    "InvalidRequest",
    "Messaging",
    "MethodNotAllowed",
    "NotFound",
    "OPERATIONS",
    "Operation",
    "Page",
    "Paged",
    "PayloadRef",
    "PayloadRefMismatchError",
    "PayloadTooLarge",
    "PermanentError",
    "PreconditionFailed",
    "RangeNotSatisfiable",
    "RateLimited",
    "RequestTimeout",
    "ServiceUnavailable",
    "StepContext",
    "StreamedResponse",
    "Switchboard",
    "SwitchboardError",
    "Unauthorized",
    "UnsupportedMediaType",
    "WithUsage",
    "current_traceparent",
    "fetch_payload_ref",
    "generate_keypair",
    "hydrate",
    "with_usage",
]
