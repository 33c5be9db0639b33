"""An agent in 20 lines: serves the capability `text.summarize` until SIGTERM or Ctrl-C.
    SWITCHBOARD_URL=http://127.0.0.1:8080 SWITCHBOARD_API_KEY=sk_... python3 examples/agent.py
"""

import logging
import os

from switchboard import Agent, PermanentError, Switchboard

logging.basicConfig(level=logging.INFO)
client = Switchboard(os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8080"), api_key=os.environ["SWITCHBOARD_API_KEY"])
agent = Agent(client, "summarizer", capabilities=["text.summarize"], concurrency=4)


@agent.on("plan.step.execute")  # a plan's step; "routine.execute" and topics work the same way
def summarize(message: dict) -> dict:
    text = (message["payload"].get("input") or {}).get("text")
    if not isinstance(text, str):
        raise PermanentError("input.text must be a string")  # dead-lettered, not retried
    return {"summary": text[:80], "words": len(text.split())}  # the acknowledgement's output


if __name__ == "__main__":
    agent.run()
