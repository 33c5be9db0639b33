"""A plan with a human approval, started from Python: `draft` (an agent) writes, a person approves,
then `publish` (an agent) runs. The agents are served in this process for the demo.
    SWITCHBOARD_URL=http://127.0.0.1:8080 SWITCHBOARD_API_KEY=sk_admin... python3 examples/approval_plan.py
"""

from __future__ import annotations

import os
import time

from switchboard import Agent, Conflict, Switchboard


def main(client: Switchboard, prefix: str = "example") -> str:
    drafter = Agent(client, f"{prefix}-drafter", capabilities=[f"{prefix}-drafter"])
    publisher = Agent(client, f"{prefix}-publisher", capabilities=[f"{prefix}-publisher"])
    drafter.on("plan.step.execute")(lambda m: {"draft": f"On {m['payload']['input']['topic']}: it matters."})
    publisher.on("plan.step.execute")(lambda m: {"published": m["payload"]["input"]["draft"]})
    steps = [
        {"id": "draft", "type": "agent", "agent": drafter.agent_id, "input": {"topic": "{{input.topic}}"}},
        {"id": "review", "type": "human_approval", "depends_on": ["draft"], "prompt": "Publish the draft on {{input.topic}}?"},
        {"id": "publish", "type": "agent", "agent": publisher.agent_id, "depends_on": ["review"], "input": {"draft": "{{steps.draft.output.draft}}"}},
    ]
    alias = f"{prefix}-article"
    try:
        client.coordination.create_plan(alias=alias, steps=steps)
    except Conflict:
        client.coordination.update_plan(plan_id=alias, alias=alias, steps=steps)
    drafter.start()
    publisher.start()
    try:
        run = client.coordination.start_run(plan_id=alias, input={"topic": "agents"})
        while client.coordination.get_run(run_id=run["id"])["status"] != "waiting":
            time.sleep(0.2)
        # A person decides (here at once; the console, an approval link or this call in real life).
        client.coordination.approve_step(run_id=run["id"], step_id="review", approved=True, comment="looks good")
        while (done := client.coordination.get_run(run_id=run["id"]))["status"] not in ("completed", "failed"):
            time.sleep(0.2)
        return str(next(step for step in done["steps"] if step["id"] == "publish")["output"])
    finally:
        drafter.stop()
        publisher.stop()


if __name__ == "__main__":
    print(main(Switchboard(os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8080"), api_key=os.environ["SWITCHBOARD_API_KEY"])))
