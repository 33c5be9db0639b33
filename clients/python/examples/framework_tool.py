"""Serves a function an LLM framework would call (a "tool") as a Switchboard agent, unchanged.

Agent frameworks describe tools as a function plus a JSON schema of its arguments (LangChain's
`@tool`, OpenAI function calling, LlamaIndex's FunctionTool…). `serve_tool` takes any such callable
and makes it a capability: each message's arguments (a plan step's input, a routine's payload
or a direct message's payload) become the keyword arguments, and the return value the step's output.
With LangChain, pass `lambda **kw: my_tool.invoke(kw)`.
    SWITCHBOARD_URL=... SWITCHBOARD_API_KEY=sk_... python3 examples/framework_tool.py
"""

from __future__ import annotations

import inspect
import os
from typing import Any, Callable

from switchboard import Agent, PermanentError, Switchboard


def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """The kind of function an LLM framework calls: typed arguments in, JSON out."""
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit}


def serve_tool(client: Switchboard, agent_id: str, capability: str, tool: Callable[..., Any]) -> Agent:
    agent = Agent(client, agent_id, capabilities=[{"capability": capability, "metadata": {"description": inspect.getdoc(tool) or capability}}])

    @agent.on("*")
    def call(message: dict[str, Any]) -> Any:
        payload = message.get("payload") or {}
        # A plan step's arguments are its `input`, a routine's its `payload`, a direct message's the payload itself.
        arguments = next((payload[key] for key in ("input", "payload") if isinstance(payload.get(key), dict)), payload)
        try:
            inspect.signature(tool).bind(**arguments)
        except TypeError as error:  # wrong arguments will not get better on a retry
            raise PermanentError(f"{capability}: {error}") from error
        return tool(**arguments)

    return agent


if __name__ == "__main__":
    client = Switchboard(os.environ.get("SWITCHBOARD_URL", "http://127.0.0.1:8080"), api_key=os.environ["SWITCHBOARD_API_KEY"])
    serve_tool(client, "weather", "weather.current", get_weather).run()
