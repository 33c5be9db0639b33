"""The suite runs against a real Switchboard server: `npm test` (test/client/python.test.ts) starts
one per database and passes it by environment. By hand:
    SWITCHBOARD_TEST_URL=http://127.0.0.1:8080 SWITCHBOARD_TEST_ADMIN_KEY=sk_... \\
        PYTHONPATH=clients/python/src python3 -m pytest clients/python/tests -q
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from switchboard import Switchboard  # noqa: E402

URL = os.environ.get("SWITCHBOARD_TEST_URL")
ADMIN_KEY = os.environ.get("SWITCHBOARD_TEST_ADMIN_KEY")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if URL and ADMIN_KEY:
        return
    skip = pytest.mark.skip(reason="SWITCHBOARD_TEST_URL and SWITCHBOARD_TEST_ADMIN_KEY name no server")
    for item in items:
        if "server" in item.fixturenames or "admin" in item.fixturenames or "agent_client" in item.fixturenames:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def server() -> str:
    assert URL
    return URL


@pytest.fixture(scope="session")
def admin(server: str) -> Switchboard:
    return Switchboard(server, api_key=ADMIN_KEY)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def agent_client(admin: Switchboard, server: str) -> Callable[[str], Switchboard]:
    """A client with a new agent key for this agent id."""

    def make(agent_id: str) -> Switchboard:
        key = admin.auth.create_key(agent_id=agent_id, role="agent", name=f"pytest {agent_id}")
        return Switchboard(server, api_key=key["key"])

    return make


def wait_for(check: Callable[[], object], timeout: float = 15.0, interval: float = 0.1) -> object:
    """Polls `check` until it returns something truthy (bounded), and returns that."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {check}")
        time.sleep(interval)


class ServerProcess:
    """A `switchboard serve` this suite starts and restarts on one port (its own database)."""

    def __init__(self, spec: dict[str, object]) -> None:
        self.argv = [str(a) for a in spec["argv"]]  # type: ignore[union-attr]
        self.env = {str(k): str(v) for k, v in spec["env"].items()}  # type: ignore[union-attr]
        self.admin_key = self.env["SWITCHBOARD_ADMIN_KEY"]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**self.env, "SWITCHBOARD_HOST": "127.0.0.1", "SWITCHBOARD_PORT": str(self.port), "PATH": os.environ.get("PATH", "")}
        self.process = subprocess.Popen(self.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert self.process.stdout is not None
        deadline = time.monotonic() + 60
        for line in self.process.stdout:
            try:
                if json.loads(line).get("url"):
                    break
            except ValueError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("the server did not start")
        else:
            raise AssertionError(f"the server exited with {self.process.wait()}")
        # Its later lines are not read: they go to a pipe that is drained so the server never blocks.
        stdout = self.process.stdout
        import threading

        threading.Thread(target=lambda: [None for _ in stdout], daemon=True).start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture(scope="module")
def own_server() -> Iterator[ServerProcess]:
    """A server the test may stop and start again; skipped unless SWITCHBOARD_TEST_SERVE describes one."""
    spec = os.environ.get("SWITCHBOARD_TEST_SERVE")
    if not spec:
        pytest.skip("SWITCHBOARD_TEST_SERVE describes no server to start")
    process = ServerProcess(json.loads(spec))
    process.start()
    try:
        yield process
    finally:
        process.stop()
