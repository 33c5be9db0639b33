"""The agent worker: registers capabilities, heartbeats its load, long-polls its inbox and runs
handlers with bounded concurrency, acknowledging with a handler's return value or rejecting with
its error (redelivered, unless it is a PermanentError). The contract of the TypeScript
``createAgent``, with threads."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, Union

from ._client import Switchboard
from ._errors import ConnectionFailed, NotFound, ServiceUnavailable, SwitchboardError
from ._payload_refs import hydrate
from ._step import StepContext, handled, takes_context

Message = dict[str, Any]
# ``handler(message)``, or ``handler(message, ctx)`` for a plan step's checkpoints (StepContext).
Handler = Callable[..., Any]
H = TypeVar("H", bound=Handler)

logger = logging.getLogger("switchboard.agent")

_traceparent: contextvars.ContextVar[str | None] = contextvars.ContextVar("switchboard_traceparent", default=None)


def current_traceparent() -> str | None:
    """The W3C traceparent of the message the current handler runs for (continued by the handler's
    span when OpenTelemetry is installed), to pass on to the calls it makes."""
    return _traceparent.get()


class PermanentError(Exception):
    """Raised by a handler when retrying cannot help: the message is dead-lettered at once."""


class WithUsage:
    """A handler's output and the usage (model, tokens, cost) its acknowledgement records."""

    def __init__(self, output: Any, usage: dict[str, Any]) -> None:
        self.output = output
        self.usage = usage


def with_usage(output: Any, usage: dict[str, Any]) -> WithUsage:
    """What a handler returns to acknowledge with ``output`` and record ``usage``
    (``{"model", "input_tokens", "output_tokens", "cached_tokens"?, "cost_usd"?, "provider"?}``);
    a plain dict would be taken for the output."""
    return WithUsage(output, usage)


def topic_matches(pattern: str, name: str) -> bool:
    """Subscription syntax: `*` matches one dot-separated token, a final `>` one or more."""
    want, have = pattern.split("."), name.split(".")
    for index, token in enumerate(want):
        if token == ">" and index == len(want) - 1:
            return len(have) > index
        if index >= len(have) or (token != "*" and token != have[index]):
            return False
    return len(have) == len(want)


class _Tracing:
    """A consumer span per message when OpenTelemetry is installed; otherwise the traceparent as received."""

    def __init__(self) -> None:
        try:
            from opentelemetry import trace
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError:
            self.enabled = False
            return
        self.enabled = True
        self._trace = trace
        self._propagator = TraceContextTextMapPropagator()

    def start(self, agent_id: str, message: Message) -> tuple[Any, str | None]:
        received = message.get("traceparent")
        if not self.enabled:
            return None, received
        parent = self._propagator.extract({"traceparent": received} if received else {})
        span = self._trace.get_tracer("switchboard").start_span(
            f"process {agent_id}",
            context=parent,
            kind=self._trace.SpanKind.CONSUMER,
            attributes={
                "messaging.system": "switchboard",
                "messaging.operation.type": "process",
                "messaging.destination.name": agent_id,
                "messaging.message.id": message.get("message_id", ""),
                "switchboard.message.event_name": message.get("event_name", ""),
            },
        )
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=self._trace.set_span_in_context(span, parent))
        return span, carrier.get("traceparent", received)


class Agent:
    """An agent worker.

        agent = Agent(client, "summarizer", capabilities=["text.summarize"])

        @agent.on("text.summarize")
        def summarize(message):
            return {"summary": message["payload"]["text"][:100]}

        agent.run()  # or agent.start() ... agent.stop()

    A handler gets the message hydrated: a payload (or a plan step's input) that travelled by
    reference is fetched and checked first (``hydrate``), and a mismatch rejects the message for
    redelivery. A handler's return value is the acknowledgement's output (``with_usage(output, usage)`` also
    records what the work consumed); ``PermanentError`` rejects the
    message for good (dead letter); any other exception rejects it for redelivery. ``async def``
    handlers run on one event loop thread. The lease of a message is extended while its handler
    runs; heartbeats report the load. ``stop()`` lets in-flight handlers finish.
    """

    def __init__(
        self,
        client: Switchboard,
        agent_id: str,
        capabilities: Iterable[Union[str, dict[str, Any]]] = (),
        groups: Iterable[str] | None = None,
        concurrency: int = 4,
        *,
        topics: Iterable[str] = (),
        visibility_timeout: int = 30,
        poll_timeout: int = 5,
        heartbeat_interval: float = 10.0,
        log: logging.Logger | None = None,
    ) -> None:
        self.client = client
        self.agent_id = agent_id
        self.capabilities = list(capabilities)
        self.groups = list(groups) if groups is not None else None
        self.concurrency = max(1, concurrency)
        self.topics = list(topics)
        self.visibility_timeout = visibility_timeout
        self.poll_timeout = poll_timeout
        self.heartbeat_interval = heartbeat_interval
        self.log = log or logger
        self._handlers: list[tuple[str, Handler]] = []
        self._subscriptions: list[str] = []
        self._lock = threading.Condition()
        self._in_flight: dict[str, float] = {}  # message id -> when its lease was last extended
        self._active = False
        self._stopping = threading.Event()
        # Set once the handlers are done: the keeper (leases, heartbeats) may end.
        self._drained = threading.Event()
        self._threads: list[threading.Thread] = []
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._failing_since: float | None = None
        self._tracing = _Tracing()

    # -- handlers -----------------------------------------------------------------------------

    def on(self, event_name: str) -> Callable[[H], H]:
        """Routes messages by ``event_name``: an exact name, a pattern in the subscription syntax
        (``orders.*``, ``orders.>``), or ``*`` for any. An exact name wins, then the patterns in the
        order they were added, then ``*``."""

        def register(handler: H) -> H:
            self._handlers.append((event_name, handler))
            return handler

        return register

    def _route(self, event_name: str) -> Handler | None:
        for pattern, handler in self._handlers:
            if pattern == event_name:
                return handler
        for pattern, handler in self._handlers:
            if pattern != "*" and topic_matches(pattern, event_name):
                return handler
        for pattern, handler in self._handlers:
            if pattern == "*":
                return handler
        return None

    @property
    def in_flight(self) -> int:
        """Messages being handled now."""
        with self._lock:
            return len(self._in_flight)

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Registers the capabilities and subscriptions, then polls and heartbeats in background threads."""
        if self._active:
            return
        for capability in self.capabilities:
            registration = {"capability": capability} if isinstance(capability, str) else dict(capability)
            registration["agent_id"] = self.agent_id
            if self.groups is not None:
                registration["groups"] = self.groups
            self.client.discovery.register_capability(**registration)
        for topic in self.topics:
            self._subscriptions.append(self.client.messaging.subscribe(agent_id=self.agent_id, topic=topic)["id"])
        self._active = True
        self._stopping.clear()
        self._drained.clear()
        self._executor = ThreadPoolExecutor(self.concurrency, thread_name_prefix=f"switchboard-{self.agent_id}")
        if any(inspect.iscoroutinefunction(handler) for _, handler in self._handlers):
            self._loop = asyncio.new_event_loop()
            self._spawn("loop", self._loop.run_forever)
        self._spawn("poll", self._poll)
        self._spawn("keeper", self._keep)

    def stop(self, deregister: bool = False) -> None:
        """Stops polling and waits until every message received is handled and acknowledged or
        rejected (a long poll under way ends within ``poll_timeout``). Leaves discovery and the
        topics only with ``deregister=True``."""
        if not self._active:
            return
        self._active = False
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()
        for thread in self._threads:
            if thread.name.endswith("-poll"):
                thread.join()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._drained.set()
        for thread in self._threads:
            if thread.name.endswith("-keeper"):
                thread.join()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            for thread in self._threads:
                if thread.name.endswith("-loop"):
                    thread.join()
            self._loop.close()
            self._loop = None
        self._threads.clear()
        if deregister:
            for subscription_id in self._subscriptions:
                self.client.messaging.unsubscribe(subscription_id=subscription_id)
            self._subscriptions.clear()
            self.client.discovery.deregister_agent(agent_id=self.agent_id)

    def run(self) -> None:
        """Starts, then blocks until SIGTERM or Ctrl-C (or ``stop()`` from another thread), and stops gracefully."""
        self.start()
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, lambda *_: self._stopping.set())
        try:
            while not self._stopping.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.stop()

    def _spawn(self, role: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"switchboard-{self.agent_id}-{role}", daemon=True)
        thread.start()
        self._threads.append(thread)

    # -- the loops ----------------------------------------------------------------------------

    def _poll(self) -> None:
        while self._active:
            with self._lock:
                while self._active and len(self._in_flight) >= self.concurrency:
                    self._lock.wait()
                free = self.concurrency - len(self._in_flight)
            if not self._active:
                return
            try:
                answer = self.client.messaging.receive(agent_id=self.agent_id, timeout=self.poll_timeout, max=free, visibility_timeout=self.visibility_timeout)
                self._reached()
            except Exception as error:  # noqa: BLE001 - the loop goes on whatever failed
                self._lost(error)
                self._stopping.wait(1.0)
                continue
            # Whatever was received is handled even when stop() came meanwhile: nothing leased is dropped.
            for message in answer["messages"]:
                with self._lock:
                    self._in_flight[message["message_id"]] = time.monotonic()
                assert self._executor is not None
                self._executor.submit(self._handle, dict(message))

    def _keep(self) -> None:
        """Heartbeats with the load, and extends the lease of each message handled for longer than half of it."""
        next_beat = time.monotonic()
        half = self.visibility_timeout / 2
        while True:
            now = time.monotonic()
            if self.heartbeat_interval > 0 and now >= next_beat and self._active:
                next_beat = now + self.heartbeat_interval
                try:
                    self.client.discovery.heartbeat(agent_id=self.agent_id, load=min(1.0, self.in_flight / self.concurrency))
                    self._reached()
                except Exception as error:  # noqa: BLE001
                    self._lost(error)
            with self._lock:
                due = [message_id for message_id, extended in self._in_flight.items() if now - extended >= half]
            for message_id in due:
                try:
                    self.client.messaging.extend(message_id=message_id, visibility_timeout=self.visibility_timeout)
                    with self._lock:
                        if message_id in self._in_flight:
                            self._in_flight[message_id] = time.monotonic()
                except SwitchboardError as error:
                    # An extend racing the acknowledgement finds the message settled: not worth reporting.
                    with self._lock:
                        settled = message_id not in self._in_flight
                    if not settled:
                        self._lost(error)
            # Not _stopping: while stop() waits for the handlers, their leases are still extended.
            if self._drained.wait(min(0.5, half / 2)):
                return

    def _handle(self, message: Message) -> None:
        message_id = message["message_id"]
        span, traceparent = self._tracing.start(self.agent_id, message)
        token = _traceparent.set(traceparent)
        client = self.client.with_options(headers={"traceparent": traceparent}) if traceparent else self.client
        try:
            try:
                handler = self._route(message.get("event_name", ""))
                if handler is None:
                    raise PermanentError(f"agent {self.agent_id} has no handler for '{message.get('event_name')}'")
                # What travelled by reference is fetched (and checked) before the handler sees the message.
                message = hydrate(message, timeout=self.client.timeout)
                output = self._invoke(handler, handled(message), StepContext(client, message))
                arguments: dict[str, Any] = {"message_id": message_id}
                if isinstance(output, WithUsage):
                    arguments["usage"] = output.usage
                    output = output.output
                if output is not None:
                    json.dumps(output)  # an output that is no JSON fails the handler, not the acknowledgement
                    arguments["output"] = output
            except Exception as error:  # noqa: BLE001 - a handler's failure is the message's rejection
                if span is not None:
                    span.record_exception(error)
                    span.set_status(self._tracing._trace.Status(self._tracing._trace.StatusCode.ERROR, str(error)))
                requeue = not isinstance(error, PermanentError)
                reason = str(error) or type(error).__name__
                delivery = int(message.get("retry_count", 0)) + 1
                self.log.warning(
                    "agent %s: message %s (%s, delivery %d) failed: %s%s",
                    self.agent_id, message_id, message.get("event_name"), delivery, reason, "" if requeue else " (permanent)",
                )
                self._settle(lambda: client.messaging.reject(message_id=message_id, reason=reason[:4000], requeue=requeue))
            else:
                self._settle(lambda: client.messaging.acknowledge(**arguments))  # type: ignore[arg-type]
        finally:
            _traceparent.reset(token)
            if span is not None:
                span.end()
            with self._lock:
                self._in_flight.pop(message_id, None)
                self._lock.notify_all()

    def _settle(self, send: Callable[[], Any]) -> None:
        """Acknowledges or rejects, again while the server is unreachable (restarting) and the lease
        lasts: the client does not repeat a POST by itself. A repeat after a lost answer finds the
        message settled (404): it was settled once, which is all that counts."""
        deadline = time.monotonic() + self.visibility_timeout
        delay = 0.2
        repeated = False
        while True:
            try:
                send()
                self._reached()
                return
            except NotFound as error:
                if not repeated:  # the lease ran out and the message went back: it will be redelivered
                    self.log.warning("agent %s: could not settle a message: %s", self.agent_id, error)
                return
            except (ConnectionFailed, ServiceUnavailable) as error:
                self._lost(error)
                if time.monotonic() + delay > deadline:
                    return  # the lease ends: the server redelivers the message
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                repeated = True
            except SwitchboardError as error:
                self.log.warning("agent %s: could not settle a message: %s", self.agent_id, error)
                return

    def _invoke(self, handler: Handler, message: Message, ctx: StepContext) -> Any:
        result = handler(message, ctx) if takes_context(handler) else handler(message)
        if inspect.isawaitable(result):
            if self._loop is None:
                raise RuntimeError("an async handler was registered after start()")
            traceparent = _traceparent.get()

            async def awaited() -> Any:
                # The task runs in the loop's context: the handler's traceparent is set again there.
                _traceparent.set(traceparent)
                return await result

            return asyncio.run_coroutine_threadsafe(awaited(), self._loop).result()
        return result

    # -- reporting ----------------------------------------------------------------------------

    def _lost(self, error: BaseException) -> None:
        with self._lock:
            if self._failing_since is not None:
                return
            self._failing_since = time.monotonic()
        self.log.error("agent %s: cannot reach the server (%s); retrying", self.agent_id, error)

    def _reached(self) -> None:
        with self._lock:
            since = self._failing_since
            self._failing_since = None
        if since is not None:
            self.log.info("agent %s: reached the server again after %d s", self.agent_id, round(time.monotonic() - since))
