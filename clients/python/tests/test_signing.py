"""Ed25519 signing: a signed agent's requests (JSON, query, multipart) are accepted; a wrong key is
refused; without `cryptography` the client says what to install."""

from __future__ import annotations

import builtins
import io
from typing import Any

import pytest
from conftest import unique

from switchboard import Switchboard, Unauthorized

cryptography = pytest.importorskip("cryptography", reason="signing needs the optional cryptography package")

from switchboard import generate_keypair  # noqa: E402


def test_a_signed_agent_calls_the_api(admin: Switchboard, server: str) -> None:
    agent_id = unique("signed")
    private, public = generate_keypair()
    admin.auth.add_public_key(agent_id=agent_id, public_key=public)
    client = Switchboard(server, agent_id=agent_id, private_key=private)
    assert client.auth.whoami()["agent_id"] == agent_id
    client.discovery.register_capability(agent_id=agent_id, capability=f"{agent_id}.work")
    assert [a["agent_id"] for a in client.discovery.find_agents(capability=f"{agent_id}.*")] == [agent_id]
    uploaded = client.artifacts.upload(file=io.BytesIO(b"signed bytes" * 1000), name="s.bin", metadata={"by": "signature"})
    with client.artifacts.download(artifact_id=uploaded["id"]) as response:
        assert response.read() == b"signed bytes" * 1000
    sent = client.messaging.send(destination=agent_id, event_name="self", payload={"q": "a b&c"}, idempotency_key=unique("k"))
    assert client.messaging.receive(agent_id=agent_id, timeout=1)["messages"][0]["message_id"] == sent["message_id"]


def test_a_wrong_key_is_refused(admin: Switchboard, server: str) -> None:
    agent_id = unique("signed")
    _, public = generate_keypair()
    other, _ = generate_keypair()
    admin.auth.add_public_key(agent_id=agent_id, public_key=public)
    with pytest.raises(Unauthorized) as raised:
        Switchboard(server, agent_id=agent_id, private_key=other).auth.whoami()
    assert raised.value.status == 401 and raised.value.request_id


def test_without_cryptography_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cryptography(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("cryptography"):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cryptography)
    with pytest.raises(ImportError, match=r"pip install 'switchboard\[signing\]'"):
        Switchboard("http://127.0.0.1:1", agent_id="a", private_key="-----BEGIN PRIVATE KEY-----")
