"""Large payloads by reference: sends that upload a payload over the inline limit and send its
``payload_ref``, ``hydrate`` fetching and checking what a message carries by reference, and the
agent worker handing its handlers hydrated messages (a payload, a plan step's input)."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import unique, wait_for

from switchboard import DEFAULT_INLINE_PAYLOAD_BYTES, Agent, PayloadRefMismatchError, Switchboard, hydrate
from switchboard._payload_refs import oversized_json

KIB = 1024


def json_bytes(value: Any) -> bytes:
    """The payload's JSON text as the SDK uploads it (and JSON.stringify writes it)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def recorded(client: Switchboard) -> list[tuple[str, dict[str, Any]]]:
    """The operations the client calls from now on, with their arguments (the calls still go out)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    invoke = client._invoke

    def record(operation: Any, arguments: dict[str, Any]) -> Any:
        calls.append((operation.operation_id, dict(arguments)))
        return invoke(operation, arguments)

    client._invoke = record  # type: ignore[method-assign]
    return calls


def receive_all(client: Switchboard, agent_id: str, count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    def more() -> bool:
        messages.extend(client.messaging.receive(agent_id=agent_id, timeout=1, max=count - len(messages))["messages"])
        return len(messages) >= count

    wait_for(more)
    return messages


@pytest.fixture()
def served() -> Iterator[Callable[[bytes], str]]:
    """A local HTTP server answering GET with the bytes given: a reference's URL without a Switchboard server."""
    content: list[bytes] = [b""]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content[0])))
            self.end_headers()
            self.wfile.write(content[0])

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def serve(data: bytes) -> str:
        content[0] = data
        return f"http://127.0.0.1:{server.server_address[1]}/payload.json"

    yield serve
    server.shutdown()
    server.server_close()
    thread.join()


def test_hydrate_fetches_checks_and_leaves_the_message_given(served: Callable[[bytes], str]) -> None:
    value = {"doc": "é" * 1000}
    data = json_bytes(value)
    url = served(data)
    ref = {"artifact_id": "art_local", "url": url, "size_bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    message = {"message_id": "m1", "event_name": "doc", "payload": None, "payload_ref": ref}
    assert hydrate(message)["payload"] == value
    assert message["payload"] is None

    step = {"message_id": "m2", "event_name": "plan.step.execute", "payload": {"run_id": "r", "step_id": "s", "input": None, "input_ref": ref}}
    assert hydrate(step)["payload"]["input"] == value

    with pytest.raises(PayloadRefMismatchError, match="sha256"):
        hydrate({**message, "payload_ref": {**ref, "sha256": "0" * 64}})
    with pytest.raises(PayloadRefMismatchError, match="bytes"):
        hydrate({**message, "payload_ref": {**ref, "size_bytes": len(data) + 1}})
    with pytest.raises(PayloadRefMismatchError, match="bytes"):
        hydrate({**message, "payload_ref": {**ref, "size_bytes": len(data) - 1}})


def test_small_payloads_are_untouched() -> None:
    # No reference: the very message, and no request (the URL could not be fetched).
    small = {"message_id": "m", "event_name": "e", "payload": {"n": 1}}
    assert hydrate(small) is small
    inline = {"message_id": "m", "event_name": "e", "payload": {"n": 1}, "payload_ref": {"url": "http://127.0.0.1:9/x", "sha256": "0"}}
    assert hydrate(inline) is inline
    assert oversized_json({"n": 1}, DEFAULT_INLINE_PAYLOAD_BYTES) is None
    assert oversized_json({"doc": "x" * (300 * KIB)}, DEFAULT_INLINE_PAYLOAD_BYTES) == json_bytes({"doc": "x" * (300 * KIB)})
    # Counted in UTF-8 bytes: 100 Ki characters of two bytes each are over 128 KiB.
    assert oversized_json({"doc": "é" * (100 * KIB)}, 128 * KIB) is not None
    assert oversized_json({"doc": "x" * (300 * KIB)}, None) is None


def test_send_uploads_a_large_payload_and_sends_its_payload_ref() -> None:
    # No server: the operations answer as the server would, and what is sent is recorded.
    client = Switchboard("http://127.0.0.1:9")
    calls: list[tuple[str, dict[str, Any]]] = []
    answers = {
        "artifacts_createUploadUrl": {"upload_id": "up_1", "url": "http://127.0.0.1:9/api/v1/artifacts/uploads/up_1?expires=1&signature=s"},
        "artifacts_putUpload": {},
        "artifacts_confirmUpload": {"id": "art_1"},
        "messaging_send": {"message_id": "msg_1"},
        "messaging_sendBatch": {"messages": []},
    }

    def answer(operation: Any, arguments: dict[str, Any]) -> Any:
        calls.append((operation.operation_id, dict(arguments)))
        return answers[operation.operation_id]

    client._invoke = answer  # type: ignore[method-assign]
    payload = {"doc": "x" * (300 * KIB)}
    client.messaging.send(destination="b", event_name="doc", payload=payload, idempotency_key="k")
    assert [name for name, _ in calls] == ["artifacts_createUploadUrl", "artifacts_putUpload", "artifacts_confirmUpload", "messaging_send"]
    data = json_bytes(payload)
    assert calls[0][1] == {
        "name": "payload.json",
        "content_type": "application/json",
        "size_bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "metadata": {"claim_check": True},
    }
    assert calls[1][1]["content"] == data
    assert calls[3][1] == {"destination": "b", "event_name": "doc", "payload_ref": {"artifact_id": "art_1"}, "idempotency_key": "k"}

    calls.clear()
    client.messaging.send(destination="b", event_name="small", payload={"n": 1})
    client.messaging.send(destination="b", event_name="ref", payload_ref={"artifact_id": "art_mine"})
    client.with_options(headers={"x": "1"}).messaging.send_batch(messages=[{"destination": "b", "event_name": "big", "payload": payload}, {"destination": "b", "event_name": "small"}])
    assert [name for name, _ in calls] == ["messaging_send", "messaging_send", "artifacts_createUploadUrl", "artifacts_putUpload", "artifacts_confirmUpload", "messaging_sendBatch"]
    assert calls[0][1]["payload"] == {"n": 1} and calls[1][1] == {"destination": "b", "event_name": "ref", "payload_ref": {"artifact_id": "art_mine"}}
    assert calls[5][1]["messages"] == [{"destination": "b", "event_name": "big", "payload_ref": {"artifact_id": "art_1"}}, {"destination": "b", "event_name": "small"}]

    calls.clear()
    never = Switchboard("http://127.0.0.1:9", inline_payload_bytes=None)
    never._invoke = answer  # type: ignore[method-assign]
    never.messaging.send(destination="b", event_name="doc", payload=payload)
    assert [name for name, _ in calls] == ["messaging_send"] and calls[0][1]["payload"] == payload


def test_a_300_kib_payload_round_trips_by_reference(admin: Switchboard, agent_client: Callable[[str], Switchboard]) -> None:
    sender_id, receiver_id = unique("cc-sender"), unique("cc-receiver")
    sender, receiver = agent_client(sender_id), agent_client(receiver_id)
    payload = {"doc": "ü€" * (100 * KIB), "n": 1}
    data = json_bytes(payload)
    assert len(data) > 300 * KIB

    calls = recorded(sender)
    sender.messaging.send(destination=receiver_id, event_name="doc", payload=payload)
    sender.messaging.send(destination=receiver_id, event_name="small", payload={"n": 2})
    sends = [arguments for name, arguments in calls if name == "messaging_send"]
    assert "payload" not in sends[0] and sends[0]["payload_ref"]["artifact_id"]
    assert sends[1]["payload"] == {"n": 2} and "payload_ref" not in sends[1]
    big, small = sorted(receive_all(receiver, receiver_id, 2), key=lambda m: m["event_name"])
    assert big["payload"] is None
    ref = big["payload_ref"]
    assert ref["artifact_id"] == sends[0]["payload_ref"]["artifact_id"]
    assert ref["size_bytes"] == len(data) and ref["sha256"] == hashlib.sha256(data).hexdigest()
    # The artifact the client uploaded is the sender's, marked so retention deletes it with the message.
    artifact = sender.artifacts.get(artifact_id=ref["artifact_id"])
    assert artifact["owner"] == sender_id and artifact["metadata"] == {"claim_check": True}
    assert artifact["content_type"].startswith("application/json")

    hydrated = hydrate(big)
    assert json_bytes(hydrated["payload"]) == data and hydrated["payload"] == payload
    assert hydrate(small) is small and small["payload"] == {"n": 2}
    with pytest.raises(PayloadRefMismatchError):
        hydrate({**big, "payload_ref": {**ref, "sha256": "0" * 64}})


def test_send_batch_offloads_and_inline_payload_bytes_none_leaves_it_to_the_server(agent_client: Callable[[str], Switchboard]) -> None:
    sender_id, receiver_id = unique("cc-sender"), unique("cc-receiver")
    sender, receiver = agent_client(sender_id), agent_client(receiver_id)
    payload = {"doc": "b" * (300 * KIB)}
    sender.messaging.send_batch(messages=[{"destination": receiver_id, "event_name": "big", "payload": payload}, {"destination": receiver_id, "event_name": "small", "payload": {"n": 1}}])
    big, small = sorted(receive_all(receiver, receiver_id, 2), key=lambda m: m["event_name"])
    assert big["payload"] is None and sender.artifacts.get(artifact_id=big["payload_ref"]["artifact_id"])["metadata"] == {"claim_check": True}
    assert small["payload"] == {"n": 1} and small.get("payload_ref") is None
    assert hydrate(big)["payload"] == payload

    # Sent inline, the server offloads it itself: the receiver gets a reference all the same.
    inline = Switchboard(sender.url, api_key=sender._api_key, inline_payload_bytes=None)
    inline.messaging.send(destination=receiver_id, event_name="inline", payload=payload)
    (server_side,) = receive_all(receiver, receiver_id, 1)
    assert server_side["payload"] is None and server_side["payload_ref"]["artifact_id"]
    assert hydrate(server_side)["payload"] == payload


def test_the_worker_handler_gets_a_payload_and_a_step_input_hydrated(admin: Switchboard, agent_client: Callable[[str], Switchboard]) -> None:
    worker_id, sender_id = unique("cc-worker"), unique("cc-sender")
    agent = Agent(agent_client(worker_id), worker_id, poll_timeout=1, heartbeat_interval=0)
    doc = "d" * (300 * KIB)
    seen: list[Any] = []

    @agent.on("doc")
    def read(message: dict[str, Any]) -> dict[str, Any]:
        seen.append(message["payload"])
        return {}

    @agent.on("plan.step.execute")
    def step(message: dict[str, Any]) -> dict[str, Any]:
        return {"length": len(message["payload"]["input"]["doc"])}

    agent.start()
    try:
        agent_client(sender_id).messaging.send(destination=worker_id, event_name="doc", payload={"doc": doc})
        wait_for(lambda: seen)
        assert seen == [{"doc": doc}]

        plan = admin.coordination.create_plan(alias=unique("cc-plan"), steps=[{"id": "read", "type": "agent", "agent": worker_id, "input": {"doc": "{{input.doc}}"}}])
        run = admin.coordination.start_run(plan_id=plan["id"], input={"doc": doc})
        done = wait_for(lambda: (r := admin.coordination.get_run(run_id=run["id"]))["status"] == "completed" and r)
        assert done["steps"][0]["input_ref"]["size_bytes"] > 300 * KIB
        assert done["steps"][0]["output"] == {"length": len(doc)}
    finally:
        agent.stop()
