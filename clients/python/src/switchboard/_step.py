"""What a handler may do while it works on a plan step's message: save its progress, log."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Literal

from ._client import Switchboard

PLAN_STEP_EVENT = "plan.step.execute"


class StepContext:
    """A handler's second argument (when it takes two). For a plan step's message,
    ``checkpoint(state)`` saves the step's progress (JSON, at most 1 MiB): a redelivery or the next
    attempt of the step carries the latest as ``message["checkpoint"]``; ``log(message)`` appends a
    line to the step's log. Both raise for a message of no plan step."""

    def __init__(self, client: Switchboard, message: dict[str, Any]) -> None:
        self._client = client
        self._message = message
        payload = message.get("payload")
        is_step = message.get("event_name") == PLAN_STEP_EVENT and isinstance(payload, dict)
        self._step = (payload["run_id"], payload["step_id"]) if is_step and "run_id" in payload and "step_id" in payload else None

    def _path(self) -> dict[str, str]:
        if self._step is None:
            raise RuntimeError(f"message {self._message.get('message_id')} ({self._message.get('event_name')}) is no plan step's")
        return {"run_id": self._step[0], "step_id": self._step[1]}

    def checkpoint(self, state: Any) -> dict[str, Any]:
        """Saves the step's progress; answers ``{state, saved_at, attempt}``."""
        return dict(self._client.coordination.save_checkpoint(**self._path(), state=state))

    def log(self, message: str, level: Literal["debug", "info", "warn", "error"] = "info") -> None:
        """Appends a line (at most 4,000 characters; 1,000 lines a step) to the step's log."""
        self._client.coordination.append_step_log(**self._path(), message=message, level=level)


def handled(message: dict[str, Any]) -> dict[str, Any]:
    """The message as a handler gets it: a plan step's carries its latest ``checkpoint``, if any."""
    payload = message.get("payload")
    if message.get("event_name") == PLAN_STEP_EVENT and isinstance(payload, dict) and "checkpoint" in payload:
        return {**message, "checkpoint": payload["checkpoint"]}
    return message


def takes_context(handler: Callable[..., Any]) -> bool:
    """Whether a handler takes the context besides the message (older handlers take the message only)."""
    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in parameters)
