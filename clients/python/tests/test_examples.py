"""The examples of the README work as printed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from conftest import unique, wait_for

from switchboard import Switchboard

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import approval_plan  # noqa: E402
import framework_tool  # noqa: E402
import upload  # noqa: E402


def test_the_approval_plan_completes_after_the_approval(admin: Switchboard) -> None:
    assert approval_plan.main(admin, unique("ex")) == str({"published": "On agents: it matters."})


def test_a_framework_tool_served_as_an_agent(admin: Switchboard) -> None:
    agent_id = unique("weather")
    agent = framework_tool.serve_tool(admin, agent_id, f"{agent_id}.current", framework_tool.get_weather)
    agent.poll_timeout = 1
    routine = admin.routines.create(name=unique("r"), trigger_type="webhook", target_agent=agent_id, payload={"city": "Oslo"})
    agent.start()
    try:
        admin.routines.trigger(id=routine["id"])

        def succeeded() -> Any:
            items = admin.routines.list_executions(id=routine["id"]).page().items
            return items and items[0]["status"] == "success" and items[0]

        assert "Oslo" in str(wait_for(succeeded)["output"])  # type: ignore[index]
    finally:
        agent.stop()


def test_the_upload_example_round_trips_a_file(admin: Switchboard, tmp_path: Path) -> None:
    source = tmp_path / "report.bin"
    source.write_bytes(b"report" * 10_000)
    artifact = upload.main(admin, str(source))
    assert artifact["size_bytes"] == 60_000
    assert (tmp_path / "report.bin.downloaded").read_bytes() == source.read_bytes()
