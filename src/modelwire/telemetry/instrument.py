"""The public entry points: `instrument(runtime | agent)` and `instrument_agent(agent)`.

`instrument(runtime)` installs, outermost, an `llm/generate` and an `llm/stream` middleware that
emit one span and the client metrics per model call (`calls.py`). `instrument(agent)` adds the
agent's `invoke_agent` / `execute_tool` spans (`agents.py`) and instruments the agent's runtime
too (when it is an `LlmRuntime` not instrumented yet). `instrument_agent(agent)` adds only the
agent's spans. Each returns a disposer; a target already instrumented is left as it is (and the
disposer of that second call does nothing). Without OpenTelemetry installed nothing is
installed, no error is raised, and the disposer is a no-op.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..errors import ErrorCode, HarnessError
from .agents import agent_hooks
from .calls import generate_middleware, stream_middleware
from .otel import Instruments, load

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ..agent.loop import Agent
    from ..runtime import LlmRuntime

__all__ = ["instrument", "instrument_agent"]

_ACTIVE: Final[weakref.WeakSet[object]] = weakref.WeakSet()
"""The runtimes and agents instrumented now (a second instrumentation would double the spans)."""


def _nothing() -> None:
    return None


def _once(target: object, install: Callable[[], Callable[[], None]]) -> Callable[[], None]:
    if target in _ACTIVE:
        return _nothing
    _ACTIVE.add(target)
    remove = install()
    done: list[bool] = []

    def dispose() -> None:
        if not done:
            done.append(True)
            remove()
            _ACTIVE.discard(target)

    return dispose


def _runtime(tools: Instruments, runtime: LlmRuntime) -> Callable[[], None]:
    def install() -> Callable[[], None]:
        removers = (
            runtime.use(stream_middleware(tools), prepend=True),
            runtime.use_generate(generate_middleware(tools), prepend=True),
        )

        def remove_both() -> None:
            for remove in removers:
                remove()

        return remove_both

    return _once(runtime, install)


def _agent(tools: Instruments, agent: Agent[Any], name: str | None) -> Callable[[], None]:
    if not name:
        own = getattr(agent, "name", None)
        name = own if isinstance(own, str) and own else None
    return _once(agent, lambda: agent_hooks(tools, agent, name))


def _is_agent(target: object) -> bool:
    from ..agent.loop import Agent

    return isinstance(target, Agent)


def instrument(
    target: LlmRuntime | Agent[Any],  # Any: agents of every output type
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
    agent_name: str | None = None,
) -> Callable[[], None]:
    """Emit spans and the GenAI client metrics for `target` (module docstring); the disposer.

    `tracer_provider` / `meter_provider` default to the global ones. `capture_content=True` also
    records the request messages, the system prompt, the answer text and tool arguments and
    results (off by default: they may be sensitive). `agent_name` names an agent's spans
    (`gen_ai.agent.name`; default: the agent's `name` attribute, if it has one). Anything but an
    `LlmRuntime` or an `Agent` is `INVALID_ARGS`.
    """
    from ..runtime import LlmRuntime

    is_runtime = isinstance(target, LlmRuntime)
    if not is_runtime and not _is_agent(target):
        raise HarnessError(
            f"instrument() takes an LlmRuntime or an Agent, not {type(target).__name__}",
            ErrorCode.INVALID_ARGS,
        )
    tools = load(tracer_provider, meter_provider, capture_content)
    if tools is None:
        return _nothing
    if isinstance(target, LlmRuntime):
        return _runtime(tools, target)
    disposers = [_agent(tools, target, agent_name)]
    if isinstance(target.runtime, LlmRuntime):
        disposers.append(_runtime(tools, target.runtime))

    def dispose() -> None:
        for remove in reversed(disposers):
            remove()

    return dispose


def instrument_agent(
    agent: Agent[Any],  # Any: agents of every output type
    *,
    tracer_provider: TracerProvider | None = None,
    capture_content: bool = False,
    agent_name: str | None = None,
) -> Callable[[], None]:
    """Only `agent`'s `invoke_agent` / `execute_tool` spans (its runtime is left alone: its model
    calls are traced by `instrument(runtime)`); the disposer. Options as in `instrument`."""
    if not _is_agent(agent):
        raise HarnessError(
            f"instrument_agent() takes an Agent, not {type(agent).__name__}",
            ErrorCode.INVALID_ARGS,
        )
    tools = load(tracer_provider, None, capture_content)
    if tools is None:
        return _nothing
    return _agent(tools, agent, agent_name)
