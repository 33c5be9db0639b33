"""The agent worker against the real server: success, PermanentError, a transient error and its
redelivery, lease extension of a slow handler, stop() with a message in flight, async handlers,
and a server restart in the middle."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import ServerProcess, unique, wait_for

from switchboard import Agent, PermanentError, Switchboard, current_traceparent, with_usage
from switchboard.agent import topic_matches

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def execution(admin: Switchboard, routine_id: str, status: str) -> dict[str, Any]:
    """Waits for the routine's newest execution to reach `status`."""

    def check() -> dict[str, Any] | None:
        for item in admin.routines.list_executions(id=routine_id).page().items:
            if item["status"] == status:
                return dict(item)
        return None

    return wait_for(check)  # type: ignore[return-value]


@pytest.fixture()
def worker(admin: Switchboard, agent_client: Callable[[str], Switchboard]) -> Iterator[Callable[..., tuple[Agent, dict[str, Any]]]]:
    """An agent with its own key and a webhook routine aimed at it (whose executions show the ack's output)."""
    started: list[Agent] = []

    def make(**options: Any) -> tuple[Agent, dict[str, Any]]:
        agent_id = unique("worker")
        client = agent_client(agent_id)
        agent = Agent(client, agent_id, capabilities=["test.work"], poll_timeout=1, heartbeat_interval=0.5, **options)
        routine = admin.routines.create(name=unique("routine"), trigger_type="webhook", target_agent=agent_id)
        started.append(agent)
        return agent, dict(routine)

    yield make
    for agent in started:
        agent.stop()


def test_topic_patterns() -> None:
    assert topic_matches("orders.*", "orders.new") and not topic_matches("orders.*", "orders.new.eu")
    assert topic_matches("orders.>", "orders.new.eu") and not topic_matches("orders.>", "orders")


def test_success_acknowledges_with_the_return_value(admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]]) -> None:
    agent, routine = worker()
    seen: list[str | None] = []

    @agent.on("routine.execute")
    def handle(message: dict[str, Any]) -> dict[str, Any]:
        seen.append(current_traceparent())
        return {"execution": message["payload"]["execution_id"]}

    agent.start()
    triggered = admin.routines.trigger(id=routine["id"])
    done = execution(admin, routine["id"], "success")
    assert done["output"] == {"execution": triggered["id"]}
    health = wait_for(lambda: (h := admin.discovery.agent_health(agent_id=agent.agent_id))["last_heartbeat"] and h)
    assert health["status"] == "healthy"


def test_with_usage_records_what_the_handler_reports(admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]]) -> None:
    agent, routine = worker()

    @agent.on("routine.execute")
    def handle(message: dict[str, Any]) -> Any:
        return with_usage({"done": True}, {"model": "py-model", "input_tokens": 11, "output_tokens": 4, "cost_usd": 0.5})

    agent.start()
    admin.routines.trigger(id=routine["id"])
    done = execution(admin, routine["id"], "success")
    assert done["output"] == {"done": True}
    totals = admin.usage.totals(group_by="model", agent_id=agent.agent_id)
    assert totals["rows"] == [
        {"key": "py-model", "count": 1, "input_tokens": 11, "output_tokens": 4, "cached_tokens": 0, "cost_usd": 0.5}
    ]


def test_permanent_error_dead_letters_and_transient_error_redelivers(
    admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]], caplog: pytest.LogCaptureFixture
) -> None:
    agent, _ = worker()
    attempts: list[int] = []

    @agent.on("flaky")
    def flaky(message: dict[str, Any]) -> str:
        attempts.append(message["retry_count"])
        if len(attempts) == 1:
            raise RuntimeError("the first try fails")
        return "second time lucky"

    @agent.on("doomed.*")
    def doomed(message: dict[str, Any]) -> None:
        raise PermanentError("cannot ever work")

    caplog.set_level(logging.WARNING, logger="switchboard.agent")
    agent.start()
    dead = admin.messaging.send(destination=agent.agent_id, event_name="doomed.now", payload={})
    flaky_id = admin.messaging.send(destination=agent.agent_id, event_name="flaky", payload={})["message_id"]
    letters = wait_for(lambda: list(admin.messaging.list_dead_letters(agent_id=agent.agent_id)))
    assert [letter["message_id"] for letter in letters] == [dead["message_id"]]  # type: ignore[union-attr]
    assert letters[0]["reason"] == "cannot ever work"  # type: ignore[index]
    wait_for(lambda: len(attempts) >= 2 and agent.in_flight == 0)
    assert attempts[:2] == [0, 1], "redelivered once after the transient failure"
    failures = [r.getMessage() for r in caplog.records if flaky_id in r.getMessage()]
    assert len(failures) == 1 and "the first try fails" in failures[0]
    assert any(dead["message_id"] in r.getMessage() and "(permanent)" in r.getMessage() for r in caplog.records)


def test_slow_handler_keeps_its_lease(admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]]) -> None:
    # A 2 s lease and a handler that takes 5 s: without extensions the message would be redelivered.
    agent, routine = worker(visibility_timeout=2)
    release = threading.Event()
    calls: list[int] = []

    @agent.on("routine.execute")
    def slow(message: dict[str, Any]) -> str:
        calls.append(message["retry_count"])
        release.wait(5)
        return "slow but done"

    agent.start()
    admin.routines.trigger(id=routine["id"])
    wait_for(lambda: calls)
    threading.Timer(4.5, release.set).start()
    done = execution(admin, routine["id"], "success")
    assert done["output"] == "slow but done"
    assert calls == [0], "never redelivered while the handler ran"


def test_stop_waits_for_a_message_in_flight(admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]]) -> None:
    agent, routine = worker()
    entered = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    @agent.on("routine.execute")
    def handle(message: dict[str, Any]) -> str:
        calls.append(message["message_id"])
        entered.set()
        release.wait(10)
        return "finished"

    agent.start()
    admin.routines.trigger(id=routine["id"])
    assert entered.wait(15)
    stopping = threading.Thread(target=agent.stop)
    stopping.start()
    stopping.join(0.5)
    assert stopping.is_alive(), "stop() waits for the handler"
    release.set()
    stopping.join(15)
    assert not stopping.is_alive()
    assert agent.in_flight == 0
    done = execution(admin, routine["id"], "success")
    assert done["output"] == "finished"
    assert len(calls) == 1
    assert admin.messaging.list_inbox_messages(agent_id=agent.agent_id).page().total == 0, "acknowledged once, nothing left"


def test_async_handlers_and_the_traceparent(admin: Switchboard, worker: Callable[..., tuple[Agent, dict[str, Any]]]) -> None:
    agent, _ = worker(concurrency=2)
    seen: list[tuple[str, str | None, str | None]] = []

    @agent.on("async.>")
    async def handle(message: dict[str, Any]) -> None:
        import asyncio

        await asyncio.sleep(0.05)
        seen.append((message["event_name"], message.get("traceparent"), current_traceparent()))

    agent.start()
    traced = admin.with_options(headers={"traceparent": TRACEPARENT})
    traced.messaging.send(destination=agent.agent_id, event_name="async.one", payload={})
    wait_for(lambda: seen and agent.in_flight == 0)
    name, received, exposed = seen[0]
    assert name == "async.one"
    assert received is not None and received.split("-")[1] == TRACEPARENT.split("-")[1], "the message carries the sender's trace"
    assert exposed is not None and exposed.split("-")[1] == TRACEPARENT.split("-")[1], "the handler sees it"


def test_the_worker_reconnects_after_a_server_restart(own_server: ServerProcess, caplog: pytest.LogCaptureFixture) -> None:
    admin = Switchboard(own_server.url, api_key=own_server.admin_key, retries=0)
    agent_id = unique("restart")
    agent = Agent(admin, agent_id, poll_timeout=1, heartbeat_interval=0.5)
    handled: list[str] = []

    @agent.on("*")
    def handle(message: dict[str, Any]) -> str:
        handled.append(message["event_name"])
        return "ok"

    caplog.set_level(logging.INFO, logger="switchboard.agent")
    agent.start()
    try:
        admin.messaging.send(destination=agent_id, event_name="before", payload={})
        wait_for(lambda: "before" in handled and agent.in_flight == 0)
        own_server.stop()
        wait_for(lambda: any("cannot reach the server" in r.getMessage() for r in caplog.records), timeout=20)
        own_server.start()
        admin.messaging.send(destination=agent_id, event_name="after", payload={})
        wait_for(lambda: "after" in handled, timeout=30)
        wait_for(lambda: any("reached the server again" in r.getMessage() for r in caplog.records))
        # Once per outage, not once per failed call (a long poll the stopping server still answered
        # may count as a short return).
        lost = [r for r in caplog.records if "cannot reach the server" in r.getMessage()]
        back = [r for r in caplog.records if "reached the server again" in r.getMessage()]
        assert 1 <= len(lost) <= 2 and len(back) == len(lost)
        assert not [r for r in caplog.records if "failed:" in r.getMessage()], "no handler failed"
    finally:
        agent.stop()


def test_a_plan_step_resumes_from_its_checkpoint(admin: Switchboard, agent_client: Callable[[str], Switchboard]) -> None:
    agent_id = unique("counter")
    agent = Agent(agent_client(agent_id), agent_id, poll_timeout=1, heartbeat_interval=0)
    plan = admin.coordination.create_plan(alias=unique("plan"), steps=[{"id": "count", "type": "agent", "agent": agent_id}])
    seen: list[Any] = []

    @agent.on("plan.step.execute")
    def count(message: dict[str, Any], ctx: Any) -> dict[str, Any]:
        seen.append(message.get("checkpoint"))
        ctx.log(f"delivery {len(seen)}")
        if "checkpoint" not in message:
            assert ctx.checkpoint({"done": 2})["attempt"] == 1
            raise RuntimeError("interrupted")  # redelivered: the same message, now with the checkpoint
        return {"resumed_from": message["checkpoint"]["state"]["done"]}

    agent.start()
    try:
        run = admin.coordination.start_run(plan_id=plan["id"], input={})
        done = wait_for(lambda: (r := admin.coordination.get_run(run_id=run["id"]))["status"] == "completed" and r)
        assert done["output"] == {"count": {"resumed_from": 2}}
        assert done["steps"][0]["checkpoint"]["state"] == {"done": 2}
        assert seen[0] is None and seen[1]["state"] == {"done": 2}
        logs = admin.coordination.list_run_logs(run_id=run["id"]).page().items
        assert [line["message"] for line in logs] == ["delivery 1", "delivery 2"]
    finally:
        agent.stop()
