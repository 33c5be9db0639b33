"""Ed25519 request signing (an agent's own key instead of an API key).

The signed string is ``METHOD\\nPATH_WITH_QUERY\\nX-Timestamp\\nhex(sha256(raw body))``, sent with the
headers X-Agent-ID, X-Timestamp and X-Signature (base64). Signing needs the ``cryptography``
package, an optional dependency: ``pip install 'switchboard[signing]'``.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
from typing import Any

EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()

MISSING_CRYPTOGRAPHY = (
    "Ed25519 signing needs the 'cryptography' package, which is not installed: "
    "pip install 'switchboard[signing]' (or pip install cryptography), or use an API key"
)


class Ed25519Signer:
    """Signs requests as ``agent_id`` with an Ed25519 private key (PEM text or bytes, PKCS#8)."""

    def __init__(self, agent_id: str, private_key: str | bytes) -> None:
        try:
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
            from cryptography.hazmat.primitives.serialization import load_pem_private_key
        except ImportError as error:
            raise ImportError(MISSING_CRYPTOGRAPHY) from error
        pem = private_key.encode() if isinstance(private_key, str) else private_key
        key: Any = load_pem_private_key(pem, password=None)
        if not isinstance(key, Ed25519PrivateKey):
            raise ValueError("the private key is not an Ed25519 key")
        self.agent_id = agent_id
        self._key = key

    def headers(self, method: str, path_with_query: str, body_sha256: str) -> dict[str, str]:
        now = datetime.datetime.now(datetime.timezone.utc)
        timestamp = now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
        message = f"{method}\n{path_with_query}\n{timestamp}\n{body_sha256}".encode()
        signature = base64.b64encode(self._key.sign(message)).decode()
        return {"X-Agent-ID": self.agent_id, "X-Timestamp": timestamp, "X-Signature": signature}


def generate_keypair() -> tuple[str, str]:
    """A new Ed25519 key pair as (private PEM, public PEM), for ``auth.add_public_key``."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    except ImportError as error:
        raise ImportError(MISSING_CRYPTOGRAPHY) from error
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public
