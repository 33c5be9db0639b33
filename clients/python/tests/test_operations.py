"""Every generated operation, called once through the client against the real server.

A row either must succeed or names the error it must get (an approval token that does not exist,
a delivery that is not failed): either way the request was built and understood. A new route in
the OpenAPI document adds an operation without a row, and `test_every_operation_has_a_row` fails.
"""

from __future__ import annotations

import io
import urllib.parse
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import unique

from switchboard import OPERATIONS, Conflict, Forbidden, InvalidRequest, MethodNotAllowed, NotFound, Paged, StreamedResponse, Switchboard, SwitchboardError, Unauthorized

Row = Callable[[Switchboard, SimpleNamespace], Any]


@pytest.fixture(scope="module")
def ctx(admin: Switchboard, agent_client: Callable[[str], Switchboard]) -> SimpleNamespace:
    x = SimpleNamespace()
    x.agent_id = unique("ops-agent")
    x.agent = agent_client(x.agent_id)
    x.capability = admin.discovery.register_capability(agent_id=x.agent_id, capability="ops.echo", groups=["ops-group"])
    x.project = admin.projects.create(name=unique("project"))
    x.task = admin.tasks.create(title="first", project_id=x.project["id"])
    x.other_task = admin.tasks.create(title="second")
    x.plan = admin.coordination.create_plan(alias=unique("plan"), steps=[{"id": "review", "type": "human_approval", "prompt": "ok?"}])
    x.run = admin.coordination.start_run(plan_id=x.plan["id"], input={"n": 1})
    x.input_plan = admin.coordination.create_plan(alias=unique("ask"), steps=[{"id": "ask", "type": "human_input", "prompt": "why?"}])
    x.routine = admin.routines.create(name=unique("routine"), trigger_type="webhook", target_agent=x.agent_id)
    x.hook = unique("hook")
    x.trigger = admin.coordination.create_trigger(plan_id=x.plan["id"], type="webhook", config={"path": x.hook})
    x.artifact = admin.artifacts.upload(file=io.BytesIO(b"hello"), name="hello.txt", content_type="text/plain")
    x.session = admin.messaging.create_session(name=unique("session"))
    x.thread = admin.messaging.create_thread(session_id=x.session["id"], name="t", participants=[x.agent_id, unique("ops-peer")])
    x.webhook = admin.webhooks.create(url="http://127.0.0.1:9/hook", types=["run.*"])
    x.channel = admin.notifications.create_channel(type="agent", name=unique("channel"), config={"agent_id": x.agent_id})
    x.rule = admin.alerts.create_rule(
        name=unique("rule"), channels=[x.channel["id"]], condition={"type": "dead_letters", "agent_id": x.agent_id, "threshold": 1000}
    )
    return x


def _dead_letter(c: Switchboard, x: SimpleNamespace) -> str:
    sent = c.messaging.send(destination=x.agent_id, event_name="ops.dead", payload={})
    x.agent.messaging.receive(agent_id=x.agent_id, timeout=1)
    x.agent.messaging.reject(message_id=sent["message_id"], reason="for the table", requeue=False)
    return str(sent["message_id"])


def _upload_url(c: Switchboard, size: int) -> tuple[dict[str, Any], dict[str, str]]:
    upload = c.artifacts.create_upload_url(name="u.bin", content_type="application/octet-stream", size_bytes=size)
    return dict(upload), dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(upload["url"]).query))


def _signed(c: Switchboard, x: SimpleNamespace) -> dict[str, Any]:
    signed = c.artifacts.create_signed_url(artifact_id=x.artifact["id"], expires_in=60)
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(signed["url"]).query))
    return {"artifact_id": x.artifact["id"], "version": signed["version"], **query}


def _put_upload(c: Switchboard, x: SimpleNamespace) -> Any:
    upload, query = _upload_url(c, 3)
    return c.artifacts.put_upload(upload_id=upload["upload_id"], content=b"abc", **query)


def _confirm_upload(c: Switchboard, x: SimpleNamespace) -> Any:
    upload, query = _upload_url(c, 3)
    c.artifacts.put_upload(upload_id=upload["upload_id"], content=io.BytesIO(b"abc"), **query)
    return c.artifacts.confirm_upload(upload_id=upload["upload_id"])


def _download(c: Switchboard, x: SimpleNamespace) -> bytes:
    with c.artifacts.download(artifact_id=x.artifact["id"]) as response:
        assert isinstance(response, StreamedResponse)
        return response.read()


def _download_signed(c: Switchboard, x: SimpleNamespace) -> bytes:
    with c.artifacts.download_signed(**_signed(c, x)) as response:
        return response.read()


def _open_stream(c: Switchboard, x: SimpleNamespace) -> str:
    with c.events.open_stream(type="run.*") as response:
        assert response.content_type and "text/event-stream" in response.content_type
        return "opened"


def _input_run(c: Switchboard, x: SimpleNamespace) -> str:
    return str(c.coordination.start_run(plan_id=x.input_plan["id"])["id"])


# op key -> (call, the error it must raise or None when it must succeed)
ROWS: dict[str, tuple[Row, type[SwitchboardError] | None]] = {
    "auth.whoami": (lambda c, x: c.auth.whoami(), None),
    "auth.permissions": (lambda c, x: c.auth.permissions(), None),
    "auth.list_keys": (lambda c, x: c.auth.list_keys(include_revoked=True), None),
    "auth.create_key": (lambda c, x: c.auth.create_key(agent_id=x.agent_id, role="agent", name="ops"), None),
    "auth.revoke_key": (lambda c, x: c.auth.revoke_key(key_id=c.auth.create_key(agent_id=x.agent_id, role="agent", name="r")["id"], reason="table"), None),
    "auth.list_public_keys": (lambda c, x: c.auth.list_public_keys(agent_id=x.agent_id), None),
    "auth.add_public_key": (lambda c, x: c.auth.add_public_key(agent_id=x.agent_id, public_key="not a key"), InvalidRequest),
    "auth.grant_group_member": (lambda c, x: c.auth.grant_group_member(group="ops-readers", agent_id=x.agent_id), None),
    "auth.remove_group_member": (
        lambda c, x: (c.auth.grant_group_member(group="ops-leavers", agent_id=x.agent_id), c.auth.remove_group_member(group="ops-leavers", agent_id=x.agent_id)),
        None,
    ),
    "auth.list_groups": (lambda c, x: list(c.auth.list_groups()), None),
    "auth.list_group_members": (lambda c, x: list(c.auth.list_group_members(group="no-such-group")), NotFound),
    "auth.remove_public_key": (lambda c, x: c.auth.remove_public_key(agent_id=x.agent_id, key_id="pk_missing"), NotFound),
    "auth.create_user": (lambda c, x: c.auth.create_user(username=unique("py-user"), role="viewer", password="a long password"), None),
    "auth.list_users": (lambda c, x: list(c.auth.list_users()), None),
    "auth.get_user": (lambda c, x: c.auth.get_user(user_id="usr_missing"), NotFound),
    "auth.update_user": (lambda c, x: c.auth.update_user(user_id="usr_missing", disabled=True), NotFound),
    "auth.delete_user": (
        lambda c, x: c.auth.delete_user(user_id=c.auth.create_user(username=unique("py-leaver"), role="viewer")["id"]),
        None,
    ),
    "auth.sign_in": (lambda c, x: c.auth.sign_in(username="py-nobody", password="a wrong password"), Unauthorized),
    "auth.current_session": (lambda c, x: c.auth.current_session(), NotFound),
    "auth.sign_out": (lambda c, x: c.auth.sign_out(), NotFound),
    "auth.oidc_provider": (lambda c, x: c.auth.oidc_provider(), None),
    "messaging.send": (lambda c, x: c.messaging.send(destination=x.agent_id, event_name="ops.send", payload={"a": 1}, idempotency_key=unique("k")), None),
    "messaging.send_batch": (lambda c, x: c.messaging.send_batch(messages=[{"destination": x.agent_id, "event_name": "ops.batch"}]), None),
    "messaging.receive": (lambda c, x: x.agent.messaging.receive(agent_id=x.agent_id, timeout=0, max=1), None),
    "messaging.acknowledge": (lambda c, x: c.messaging.acknowledge(message_ids=["msg_missing"]), NotFound),
    "messaging.reject": (lambda c, x: c.messaging.reject(message_id="msg_missing", reason="x"), NotFound),
    "messaging.extend": (lambda c, x: c.messaging.extend(message_id="msg_missing", visibility_timeout=30), NotFound),
    "messaging.list_dead_letters": (lambda c, x: c.messaging.list_dead_letters(agent_id=x.agent_id), None),
    "messaging.list_inboxes": (lambda c, x: c.messaging.list_inboxes(), None),
    "messaging.list_inbox_messages": (lambda c, x: c.messaging.list_inbox_messages(agent_id=x.agent_id, state="pending"), None),
    "messaging.redrive_dead_letter": (lambda c, x: c.messaging.redrive_dead_letter(message_id=_dead_letter(c, x), reason="table"), None),
    "messaging.list_sessions": (lambda c, x: c.messaging.list_sessions(), None),
    "messaging.create_session": (lambda c, x: c.messaging.create_session(name=unique("s")), None),
    "messaging.get_session": (lambda c, x: c.messaging.get_session(session_id=x.session["id"]), None),
    "messaging.create_thread": (lambda c, x: c.messaging.create_thread(session_id=x.session["id"], name="u", participants=[unique("ops-peer")]), None),
    "messaging.get_thread": (lambda c, x: c.messaging.get_thread(thread_id=x.thread["id"]), None),
    "messaging.list_thread_messages": (lambda c, x: c.messaging.list_thread_messages(thread_id=x.thread["id"]), None),
    "messaging.publish": (lambda c, x: c.messaging.publish(topic="ops.news", payload={"n": 1}), None),
    "messaging.subscribe": (lambda c, x: c.messaging.subscribe(agent_id=x.agent_id, topic="ops.*"), None),
    "messaging.list_subscriptions": (lambda c, x: c.messaging.list_subscriptions(agent_id=x.agent_id), None),
    "messaging.unsubscribe": (lambda c, x: c.messaging.unsubscribe(subscription_id=c.messaging.subscribe(agent_id=x.agent_id, topic="ops.gone")["id"]), None),
    "messaging.rate_limit": (lambda c, x: c.messaging.rate_limit(agent_id=x.agent_id), None),
    "discovery.list_capabilities": (lambda c, x: c.discovery.list_capabilities(agent_id=x.agent_id), None),
    "discovery.register_capability": (lambda c, x: c.discovery.register_capability(agent_id=x.agent_id, capability="ops.other"), None),
    "discovery.get_capability": (lambda c, x: c.discovery.get_capability(capability_id=x.capability["id"]), None),
    "discovery.remove_capability": (lambda c, x: c.discovery.remove_capability(capability_id=c.discovery.register_capability(agent_id=x.agent_id, capability="ops.rm")["id"]), None),
    "discovery.deregister_agent": (lambda c, x: c.discovery.deregister_agent(agent_id=unique("nobody")), NotFound),
    "discovery.find_agents": (lambda c, x: c.discovery.find_agents(capability="ops.*", include_unhealthy=True), None),
    "discovery.heartbeat": (lambda c, x: c.discovery.heartbeat(agent_id=x.agent_id, load=0.5), None),
    "discovery.agent_health": (lambda c, x: c.discovery.agent_health(agent_id=x.agent_id), None),
    "discovery.list_groups": (lambda c, x: c.discovery.list_groups(), None),
    "discovery.list_group_agents": (lambda c, x: c.discovery.list_group_agents(group_name="ops-group"), None),
    "discovery.search": (lambda c, x: c.discovery.search(query="echo"), None),
    "routines.list": (lambda c, x: c.routines.list(trigger_type="webhook", enabled=True), None),
    "routines.create": (lambda c, x: c.routines.create(name=unique("r"), trigger_type="cron", cron_expression="0 0 * * *", target_agent=x.agent_id), None),
    "routines.get": (lambda c, x: c.routines.get(id=x.routine["id"]), None),
    "routines.update": (lambda c, x: c.routines.update(id=x.routine["id"], description="updated"), None),
    "routines.delete": (lambda c, x: c.routines.delete(id=c.routines.create(name=unique("r"), trigger_type="webhook", target_agent=x.agent_id)["id"]), None),
    "routines.trigger": (lambda c, x: c.routines.trigger(id=x.routine["id"], reason="table"), None),
    "routines.rotate_token": (lambda c, x: c.routines.rotate_token(id=x.routine["id"]), None),
    "routines.preview": (lambda c, x: c.routines.preview(id=x.routine["id"], count=1), Conflict),
    "routines.list_fires": (lambda c, x: c.routines.list_fires(id=x.routine["id"]), None),
    "routines.webhook": (lambda c, x: c.routines.webhook(token=c.routines.rotate_token(id=x.routine["id"])["webhook_token"], json={"from": "table"}), None),
    "routines.list_executions": (lambda c, x: c.routines.list_executions(id=x.routine["id"]), None),
    "routines.get_execution": (lambda c, x: c.routines.get_execution(id=c.routines.trigger(id=x.routine["id"])["id"]), None),
    "routines.delete_execution": (lambda c, x: c.routines.delete_execution(id="exec_missing"), NotFound),
    "projects.list": (lambda c, x: c.projects.list(), None),
    "projects.create": (lambda c, x: c.projects.create(name=unique("p")), None),
    "projects.get": (lambda c, x: c.projects.get(id=x.project["id"]), None),
    "projects.update": (lambda c, x: c.projects.update(id=x.project["id"], name=unique("p")), None),
    "projects.delete": (lambda c, x: c.projects.delete(id=c.projects.create(name=unique("p"))["id"], cascade=True), None),
    "tasks.list": (lambda c, x: c.tasks.list(project_id=x.project["id"]), None),
    "tasks.create": (lambda c, x: c.tasks.create(title="made"), None),
    "tasks.get": (lambda c, x: c.tasks.get(id=x.task["id"]), None),
    "tasks.update": (lambda c, x: c.tasks.update(id=x.task["id"], priority="high"), None),
    "tasks.delete": (lambda c, x: c.tasks.delete(id=c.tasks.create(title="gone")["id"]), None),
    "tasks.claim": (lambda c, x: c.tasks.claim(id=x.task["id"], agent_id=x.agent_id), None),
    "tasks.release": (lambda c, x: c.tasks.release(id=c.tasks.claim(id=c.tasks.create(title="c")["id"], agent_id=x.agent_id)["id"]), None),
    "tasks.list_dependencies": (lambda c, x: c.tasks.list_dependencies(id=x.task["id"]), None),
    "tasks.add_dependency": (lambda c, x: c.tasks.add_dependency(id=x.task["id"], depends_on=x.other_task["id"]), None),
    "tasks.remove_dependency": (lambda c, x: c.tasks.remove_dependency(id=x.other_task["id"], dep_id=c.tasks.create(title="d")["id"]), NotFound),
    "tasks.list_comments": (lambda c, x: c.tasks.list_comments(id=x.task["id"]), None),
    "tasks.add_comment": (lambda c, x: c.tasks.add_comment(id=x.task["id"], content="hello"), None),
    "tasks.list_activity": (lambda c, x: c.tasks.list_activity(id=x.task["id"]), None),
    "coordination.generate_plan": (lambda c, x: c.coordination.generate_plan(goal="echo something"), None),
    "coordination.list_plans": (lambda c, x: c.coordination.list_plans(), None),
    "coordination.create_plan": (lambda c, x: c.coordination.create_plan(alias=unique("p"), steps=[{"id": "ok", "type": "human_approval"}]), None),
    "coordination.get_plan": (lambda c, x: c.coordination.get_plan(plan_id=x.plan["id"]), None),
    "coordination.update_plan": (lambda c, x: c.coordination.update_plan(plan_id=x.plan["id"], alias=x.plan["alias"], steps=x.plan["steps"]), None),
    "coordination.delete_plan": (lambda c, x: c.coordination.delete_plan(plan_id=unique("missing")), NotFound),
    "coordination.get_plan_version": (lambda c, x: c.coordination.get_plan_version(plan_id=x.plan["id"], version=1), None),
    "coordination.list_runs": (lambda c, x: c.coordination.list_runs(plan_id=x.plan["id"], status="waiting"), None),
    "coordination.start_run": (lambda c, x: c.coordination.start_run(plan_id=x.plan["id"], input={"n": 2}), None),
    "coordination.get_run": (lambda c, x: c.coordination.get_run(run_id=x.run["id"]), None),
    "coordination.list_run_events": (lambda c, x: c.coordination.list_run_events(run_id=x.run["id"]), None),
    "coordination.cancel_run": (lambda c, x: c.coordination.cancel_run(run_id=c.coordination.start_run(plan_id=x.plan["id"])["id"], reason="table"), None),
    "coordination.redrive_run": (lambda c, x: c.coordination.redrive_run(run_id=x.run["id"]), Conflict),
    "coordination.rerun_run": (lambda c, x: c.coordination.rerun_run(run_id=x.run["id"], from_step="review"), Conflict),
    "coordination.replay_runs": (lambda c, x: c.coordination.replay_runs(filter={"plan_id": x.plan["id"]}, replay_from="start", dry_run=True), None),
    "coordination.approve_step": (lambda c, x: c.coordination.approve_step(run_id=c.coordination.start_run(plan_id=x.plan["id"])["id"], step_id="review", approved=True), None),
    "coordination.provide_input": (lambda c, x: c.coordination.provide_input(run_id=_input_run(c, x), step_id="ask", data={"why": "because"}), None),
    "coordination.create_approval_link": (lambda c, x: c.coordination.create_approval_link(run_id=c.coordination.start_run(plan_id=x.plan["id"])["id"], step_id="review", approver="user:nobody-here"), Conflict),
    # Only the agent executing the step writes to it: the admin is refused.
    "coordination.save_checkpoint": (lambda c, x: c.coordination.save_checkpoint(run_id=x.run["id"], step_id=x.run["steps"][0]["id"], state={"a": 1}), Forbidden),
    "coordination.append_step_log": (lambda c, x: c.coordination.append_step_log(run_id=x.run["id"], step_id=x.run["steps"][0]["id"], message="table"), Forbidden),
    "coordination.list_run_logs": (lambda c, x: c.coordination.list_run_logs(run_id=x.run["id"]), None),
    "coordination.list_pending_approvals": (lambda c, x: c.coordination.list_pending_approvals(), None),
    "coordination.get_approval_link": (lambda c, x: c.coordination.get_approval_link(token="missing.token"), NotFound),
    "coordination.decide_by_link": (lambda c, x: c.coordination.decide_by_link(token="missing.token", approved=True), NotFound),
    "coordination.list_triggers": (lambda c, x: c.coordination.list_triggers(plan_id=x.plan["id"]), None),
    "coordination.create_trigger": (lambda c, x: c.coordination.create_trigger(plan_id=x.plan["id"], type="event", config={"topic": "ops.*"}), None),
    "coordination.get_trigger": (lambda c, x: c.coordination.get_trigger(trigger_id=x.trigger["id"]), None),
    "coordination.update_trigger": (lambda c, x: c.coordination.update_trigger(trigger_id=x.trigger["id"], input={"k": 1}), None),
    "coordination.delete_trigger": (lambda c, x: c.coordination.delete_trigger(trigger_id="trg_missing"), NotFound),
    "coordination.list_trigger_fires": (lambda c, x: c.coordination.list_trigger_fires(trigger_id=x.trigger["id"]), None),
    "coordination.hook_get": (lambda c, x: c.coordination.hook_get(path=x.hook, params={"q": "1"}), MethodNotAllowed),
    "coordination.hook_post": (lambda c, x: c.coordination.hook_post(path=x.hook, json={"a": 1}), None),
    "coordination.hook_put": (lambda c, x: c.coordination.hook_put(path=x.hook, content=b"raw", content_type="text/plain"), MethodNotAllowed),
    "coordination.hook_patch": (lambda c, x: c.coordination.hook_patch(path=x.hook, json=[1, 2]), MethodNotAllowed),
    "coordination.hook_delete": (lambda c, x: c.coordination.hook_delete(path=f"{x.hook}/missing/deeper"), NotFound),
    "artifacts.put_upload": (_put_upload, None),
    "artifacts.list": (lambda c, x: c.artifacts.list(content_type="text/plain"), None),
    "artifacts.upload": (lambda c, x: c.artifacts.upload(file=b"bytes", name="b.bin", metadata={"k": "v"}), None),
    "artifacts.create_snippet": (lambda c, x: c.artifacts.create_snippet(name="snip", content={"a": [1, 2]}), None),
    "artifacts.create_upload_url": (lambda c, x: _upload_url(c, 10)[0], None),
    "artifacts.confirm_upload": (_confirm_upload, None),
    "artifacts.list_shared": (lambda c, x: x.agent.artifacts.list_shared(), None),
    "artifacts.get": (lambda c, x: c.artifacts.get(artifact_id=x.artifact["id"]), None),
    "artifacts.upload_version": (lambda c, x: c.artifacts.upload_version(artifact_id=x.artifact["id"], file=io.BytesIO(b"hello again"), content_type="text/plain"), None),
    "artifacts.delete": (lambda c, x: c.artifacts.delete(artifact_id=c.artifacts.upload(file=b"x", name="x")["id"]), None),
    "artifacts.download": (_download, None),
    "artifacts.download_signed": (_download_signed, None),
    "artifacts.create_signed_url": (lambda c, x: c.artifacts.create_signed_url(artifact_id=x.artifact["id"], expires_in=30), None),
    "artifacts.list_versions": (lambda c, x: c.artifacts.list_versions(artifact_id=x.artifact["id"]), None),
    "artifacts.delete_version": (lambda c, x: c.artifacts.delete_version(artifact_id=x.artifact["id"], version=99), NotFound),
    "artifacts.share": (lambda c, x: c.artifacts.share(artifact_id=x.artifact["id"], with_agents=[x.agent_id]), None),
    "artifacts.unshare": (lambda c, x: c.artifacts.unshare(artifact_id=x.artifact["id"], groups=["nobody"]), None),
    "artifacts.access": (lambda c, x: c.artifacts.access(artifact_id=x.artifact["id"]), None),
    "events.list": (lambda c, x: c.events.list(type="run.*", limit=5), None),
    "events.open_stream": (_open_stream, None),
    "webhooks.list": (lambda c, x: c.webhooks.list(), None),
    "webhooks.create": (lambda c, x: c.webhooks.create(url="http://127.0.0.1:9/other", types=["task.*"], description="table"), None),
    "webhooks.get": (lambda c, x: c.webhooks.get(id=x.webhook["id"]), None),
    "webhooks.update": (lambda c, x: c.webhooks.update(id=x.webhook["id"], description="changed"), None),
    "webhooks.delete": (lambda c, x: c.webhooks.delete(id=c.webhooks.create(url="http://127.0.0.1:9/x", types=["run.*"])["id"]), None),
    "webhooks.deliveries": (lambda c, x: c.webhooks.deliveries(id=x.webhook["id"]), None),
    "webhooks.test": (lambda c, x: c.webhooks.test(id=x.webhook["id"]), None),
    "webhooks.retry": (lambda c, x: c.webhooks.retry(id=x.webhook["id"], delivery_id="dlv_missing"), NotFound),
    "webhooks.attempts": (lambda c, x: list(c.webhooks.attempts(id=x.webhook["id"], delivery_id="dlv_missing")), NotFound),
    "notifications.list_channels": (lambda c, x: c.notifications.list_channels(), None),
    "notifications.create_channel": (lambda c, x: c.notifications.create_channel(type="webhook", name=unique("hook"), config={"url": "http://127.0.0.1:9/notify"}), None),
    "notifications.get_channel": (lambda c, x: c.notifications.get_channel(id=x.channel["id"]), None),
    "notifications.update_channel": (lambda c, x: c.notifications.update_channel(id=x.channel["id"], name="renamed"), None),
    "notifications.delete_channel": (lambda c, x: c.notifications.delete_channel(id=c.notifications.create_channel(type="agent", name="gone", config={"agent_id": x.agent_id})["id"]), None),
    "notifications.test_channel": (lambda c, x: c.notifications.test_channel(id=x.channel["id"]), None),
    "alerts.list_rules": (lambda c, x: c.alerts.list_rules(), None),
    "alerts.create_rule": (
        lambda c, x: c.alerts.create_rule(name=unique("rule"), channels=[x.channel["id"]], condition={"type": "inbox_depth", "threshold": 100000}),
        None,
    ),
    "alerts.get_rule": (lambda c, x: c.alerts.get_rule(id=x.rule["id"]), None),
    "alerts.update_rule": (lambda c, x: c.alerts.update_rule(id=x.rule["id"], severity="critical"), None),
    "alerts.delete_rule": (
        lambda c, x: c.alerts.delete_rule(
            id=c.alerts.create_rule(name="gone", channels=[x.channel["id"]], condition={"type": "dead_letters", "threshold": 100000})["id"]
        ),
        None,
    ),
    "alerts.preview_rule": (lambda c, x: c.alerts.preview_rule(condition={"type": "event_count", "event_type": "run.*", "window_s": 600, "threshold": 1}), None),
    "alerts.list": (lambda c, x: c.alerts.list(state="firing"), None),
    "alerts.get": (lambda c, x: c.alerts.get(id="alt_missing"), NotFound),
    "alerts.acknowledge": (lambda c, x: c.alerts.acknowledge(id="alt_missing"), NotFound),
    "cluster.list_nodes": (lambda c, x: c.cluster.list_nodes(), None),
    "audit.list": (lambda c, x: c.audit.list(action="webhook.create", limit=5), None),
    "audit.verify": (lambda c, x: c.audit.verify(), None),
    "usage.record": (lambda c, x: c.usage.record(agent_id=unique("spender"), model="m", input_tokens=1, output_tokens=2), None),
    "usage.totals": (lambda c, x: c.usage.totals(group_by="model"), None),
    "budgets.create": (lambda c, x: c.budgets.create(period="day", limits={"cost_usd": 5}, action="warn"), None),
    "budgets.list": (lambda c, x: c.budgets.list(), None),
    "budgets.pauses": (lambda c, x: c.budgets.pauses(), None),
    "budgets.get": (lambda c, x: c.budgets.get(id="bdg_missing"), NotFound),
    "budgets.update": (lambda c, x: c.budgets.update(id="bdg_missing", warn_at=0.5), NotFound),
    "budgets.delete": (lambda c, x: c.budgets.delete(id="bdg_missing"), NotFound),
    "budgets.resume": (lambda c, x: c.budgets.resume(id="bdg_missing"), NotFound),
}

KEYS = [f"{domain}.{name}" for domain, operations in OPERATIONS.items() for name in operations]


def test_every_operation_has_a_row() -> None:
    assert sorted(set(KEYS) - set(ROWS)) == [], "operations without a row in ROWS"
    assert sorted(set(ROWS) - set(KEYS)) == [], "rows for operations the table does not have"


@pytest.mark.parametrize("key", KEYS)
def test_operation(key: str, admin: Switchboard, ctx: SimpleNamespace) -> None:
    if key not in ROWS:
        pytest.fail(f"{key} has no row")
    call, expected = ROWS[key]
    if expected is None:
        result = call(admin, ctx)
        if isinstance(result, Paged):
            page = result.page()
            assert isinstance(page.items, list) and page.total >= len(page.items)
            list(result)
        assert result is not None
    else:
        with pytest.raises(expected) as raised:
            call(admin, ctx)
        assert raised.value.request_id, "every error carries the server's request id"
