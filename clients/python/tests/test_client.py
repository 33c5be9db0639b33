"""The client's transport with a scripted local HTTP server (standard library only): retries of
idempotent requests on 503 and connection errors, POSTs retried only with an idempotency key,
429 with Retry-After, typed errors with the request id, and paging on demand."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from switchboard import ConnectionFailed, Forbidden, NotFound, RateLimited, ServiceUnavailable, Switchboard, SwitchboardError


class Scripted:
    """Answers requests from a list of (status, body, headers); records what it got."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, Any, dict[str, str]]] = []
        self.requests: list[tuple[str, str, bytes, dict[str, str]]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                scripted.requests.append((self.command, self.path, body, dict(self.headers)))
                status, payload, headers = scripted.answers.pop(0) if scripted.answers else (200, {"data": {}}, {})
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def error(self, status: int, code: str, headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        return (status, {"error": {"code": code, "message": f"{code}!", "details": {"why": 1}}, "meta": {"request_id": f"req_{status}"}}, headers or {})


@pytest.fixture()
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.server.shutdown()
    server.server.server_close()


def client(url: str) -> Switchboard:
    return Switchboard(url, api_key="sk_test", retries=2, max_backoff=0.01)


def test_idempotent_requests_are_retried_on_503(scripted: Scripted) -> None:
    scripted.answers = [scripted.error(503, "service_unavailable"), (200, {"data": {"id": "r1"}}, {})]
    assert client(scripted.url).coordination.get_run(run_id="r1") == {"id": "r1"}
    assert [r[1] for r in scripted.requests] == ["/api/v1/coordination/runs/r1"] * 2
    assert scripted.requests[0][3]["Authorization"] == "Bearer sk_test"


def test_a_post_is_retried_only_with_an_idempotency_key(scripted: Scripted) -> None:
    scripted.answers = [scripted.error(503, "service_unavailable")]
    with pytest.raises(ServiceUnavailable) as raised:
        client(scripted.url).messaging.send(destination="a", event_name="e")
    assert raised.value.request_id == "req_503" and len(scripted.requests) == 1
    scripted.requests.clear()
    scripted.answers = [scripted.error(503, "service_unavailable"), (201, {"data": {"message_id": "m"}}, {})]
    assert client(scripted.url).messaging.send(destination="a", event_name="e", idempotency_key="k")["message_id"] == "m"
    assert len(scripted.requests) == 2 and scripted.requests[0][2] == scripted.requests[1][2]


def test_429_is_retried_after_retry_after_then_raised_with_it(scripted: Scripted) -> None:
    scripted.answers = [scripted.error(429, "rate_limited", {"retry-after": "0"}), (200, {"data": {"ok": True}}, {})]
    assert client(scripted.url).messaging.rate_limit() == {"ok": True}
    scripted.answers = [scripted.error(429, "rate_limited", {"retry-after": "0"})] * 3
    with pytest.raises(RateLimited) as raised:
        client(scripted.url).messaging.rate_limit()
    assert raised.value.retry_after == 0 and raised.value.code == "rate_limited"


def test_errors_are_typed_per_code(scripted: Scripted) -> None:
    scripted.answers = [scripted.error(404, "not_found"), scripted.error(403, "forbidden"), scripted.error(418, "teapot")]
    c = client(scripted.url)
    with pytest.raises(NotFound) as not_found:
        c.tasks.get(id="t/1")
    assert (not_found.value.status, not_found.value.details, not_found.value.request_id) == (404, {"why": 1}, "req_404")
    assert scripted.requests[0][1] == "/core/api/v1/tasks/t%2F1", "path parameters are encoded"
    with pytest.raises(Forbidden):
        c.tasks.get(id="t")
    with pytest.raises(SwitchboardError) as other:
        c.tasks.get(id="t")
    assert type(other.value) is SwitchboardError and other.value.code == "teapot"


def test_connection_errors_are_retried_then_raised() -> None:
    c = Switchboard("http://127.0.0.1:9", api_key="k", retries=1, max_backoff=0.01)
    with pytest.raises(ConnectionFailed) as raised:
        c.auth.whoami()
    assert raised.value.status == 0 and raised.value.code == "connection_error"


def test_lists_page_on_demand(scripted: Scripted) -> None:
    scripted.answers = [
        (200, {"data": [{"id": 1}, {"id": 2}], "meta": {"total": 3, "limit": 2, "offset": 0}}, {}),
        (200, {"data": [{"id": 3}], "meta": {"total": 3, "limit": 2, "offset": 2}}, {}),
    ]
    paged = client(scripted.url).tasks.list(limit=2, status="todo")
    assert scripted.requests == [], "nothing is fetched before iterating"
    assert [t["id"] for t in paged] == [1, 2, 3]
    assert [r[1] for r in scripted.requests] == ["/core/api/v1/tasks?status=todo&limit=2&offset=0", "/core/api/v1/tasks?status=todo&limit=2&offset=2"]


def test_lists_follow_the_next_cursor_and_go_past_an_estimated_total(scripted: Scripted) -> None:
    scripted.answers = [
        (200, {"data": [{"id": 1}, {"id": 2}], "meta": {"total": 2, "total_estimated": True, "limit": 2, "offset": 0, "next_cursor": "c2"}}, {}),
        (200, {"data": [{"id": 3}, {"id": 4}], "meta": {"total": 2, "total_estimated": True, "limit": 2, "offset": 0, "next_cursor": "c4"}}, {}),
        (200, {"data": [{"id": 5}], "meta": {"total": 2, "total_estimated": True, "limit": 2, "offset": 0}}, {}),
    ]
    paged = client(scripted.url).tasks.list(limit=2)
    assert [t["id"] for t in paged] == [1, 2, 3, 4, 5]
    assert [r[1] for r in scripted.requests] == ["/core/api/v1/tasks?limit=2&offset=0", "/core/api/v1/tasks?limit=2&cursor=c2", "/core/api/v1/tasks?limit=2&cursor=c4"]
    scripted.answers = [(200, {"data": [{"id": 1}], "meta": {"total": 20000, "total_estimated": True, "limit": 1, "offset": 0, "next_cursor": "c1"}}, {})]
    first = client(scripted.url).tasks.list(limit=1).page()
    assert (first.total, first.total_estimated, first.next_cursor) == (20000, True, "c1")


def test_unknown_arguments_fail_before_sending(scripted: Scripted) -> None:
    with pytest.raises(TypeError, match="to_agent"):
        client(scripted.url).messaging.send(destination="a", event_name="e", to_agent="b")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="run_id"):
        client(scripted.url).coordination.get_run()  # type: ignore[call-arg]
    assert scripted.requests == []
