"""`modelwire worker`: run queued turns with an agent (`modelwire.workers.Worker`) until a signal.

The agent comes from `--agent MODULE:FACTORY` (the module imported with the current directory on
sys.path, as uvicorn does; `FACTORY(log)` returns an `Agent`, sync or async) or from
`--model ROUTE:MODEL` (an agent without tools, with `RetryPlugin`, on the routes of the config
file as `modelwire chat` builds them, stored keys included), else the config's `[default]` model. A bad spec, an unknown route or
model, a missing key or a `memory:` log is a one-line error (exit code 2) before anything is
claimed; so are bad numbers (`Worker`'s `INVALID_CONFIG`) and a factory that raises.

SIGTERM and SIGINT call `Worker.stop()` (stop claiming, let running turns finish for
`--grace-ms`, then release their leases) and the command exits 0 once it stopped. A second
signal exits at once, as a kill would (exit code 130): nothing more is written, so the open turns
stay open and another worker resumes them once their leases expire. The worker's lines go to stderr, one per line, prefixed `modelwire worker: `.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from .errors import EXIT_INTERRUPTED, fail
from .queues import open_queue, queue_url

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import SessionLog
    from ..workers import AgentFactory, Worker

__all__ = ["PREFIX", "WorkerRequest", "load_factory", "run_worker", "say"]

PREFIX: Final = "modelwire worker: "


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerRequest:
    """The parsed `worker` command line."""

    agent: str | None = None
    model: str | None = None
    system: str | None = None
    concurrency: int = 4
    lease_ms: int = 30_000
    renew_ms: int | None = None
    grace_ms: int = 30_000
    until_idle: bool = False
    config_path: str | None = None
    log_option: str | None = None


def say(line: str) -> None:
    """One worker line on stderr (a line break inside it becomes a space)."""
    with contextlib.suppress(OSError, ValueError):  # stderr is gone: the turns still matter
        sys.stderr.write(PREFIX + " ".join(line.splitlines()) + "\n")
        sys.stderr.flush()


def _named(
    name: str, build: Callable[[SessionLog], Agent[Any] | Awaitable[Agent[Any]]]
) -> AgentFactory:
    """`build` under `name`, the name the worker gives a factory that raises."""

    def factory(log: SessionLog) -> Agent[Any] | Awaitable[Agent[Any]]:  # Any: the user's agent
        return build(log)

    factory.__name__ = factory.__qualname__ = name
    return factory


def load_factory(spec: str) -> AgentFactory:
    """The factory `--agent MODULE:FACTORY` names (FACTORY may be dotted: `mod:Class.build`)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name.strip() or not attribute.strip():
        fail(f"--agent {spec!r}: expected MODULE:FACTORY, e.g. myapp.agents:make_agent")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        missing = err.name or module_name
        if module_name == missing or module_name.startswith(missing + "."):
            fail(
                f"--agent {spec!r}: no module named {missing!r} (looked in the current "
                f"directory {cwd} and on sys.path; set PYTHONPATH to where it lives)"
            )
        fail(f"--agent {spec!r}: importing {module_name} failed: ModuleNotFoundError: {err}")
    except Exception as err:  # the user's module failed to import: still bad input
        fail(f"--agent {spec!r}: importing {module_name} failed: {type(err).__name__}: {err}")
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            fail(f"--agent {spec!r}: module {module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        fail(
            f"--agent {spec!r}: {module_name}.{attribute} is a {type(target).__name__}, not a "
            "callable factory (FACTORY(log) -> Agent)"
        )
    return _named(spec, target)


async def model_factory(
    value: str | None, *, config_path: str | None, system: str | None
) -> AgentFactory:
    """The factory of `--model ROUTE:MODEL` (None: the config's `[default]` model): checks
    route, key and model now, builds the agent (`Agent.from_model` over the worker's log) when
    the worker asks."""
    from ..runtime import LlmRuntime
    from .config import load_config
    from .routes import BUILTIN_ROUTE, build_routes, choose_model

    routes = build_routes(load_config(config_path))
    default_route, default_model = await routes.default()
    if value is None and default_route is None:
        fail(
            "no agent to run: pass --agent MODULE:FACTORY or --model ROUTE:MODEL, or set "
            '[default] model = "ROUTE:MODEL" in the config file (`modelwire config path`)'
        )
    if value is None:
        name, wanted = default_route or BUILTIN_ROUTE, default_model
    else:
        name, wanted = await routes.parse(value, default_route or BUILTIN_ROUTE, "--model")
    route = routes.get(name)
    if route.missing_env is not None:
        var = route.missing_env
        fail(
            f"{var} is not set: export {var}=<your key> or store one with `modelwire keys set "
            f"{name}` to run the {name!r} route (see `modelwire providers`)",
            code="MISSING_CREDENTIAL",
        )
    model = await choose_model(route, wanted)
    runtime = LlmRuntime()
    routes.register(runtime, [name])

    def build(log: SessionLog) -> Agent[Any]:  # Any: an agent of text output
        from ..agent import Agent
        from ..retry import RetryPlugin

        return Agent.from_model(
            f"{name}:{model}", log=log, runtime=runtime, system=system, plugins=[RetryPlugin()]
        )

    return _named(value or f"{name}:{model}", build)


async def _serve(worker: Worker) -> int:
    """Run `worker` until it stops; signals as the module docstring says."""
    loop = asyncio.get_running_loop()
    received: list[str] = []

    def on_signal(name: str) -> None:
        received.append(name)
        if len(received) == 1:
            say(
                f"{name}: stopping (no new claims; running turns get {worker.grace_s * 1000:g} ms "
                "to finish, then their leases are released)"
            )
            worker.stop()
            return
        say(
            f"{name} again: exiting now (unfinished turns are resumed by another worker once "
            "their leases expire)"
        )
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write("interrupted\n")
            sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)  # as a kill: the open turns stay open for a takeover

    installed: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig.name)
            installed.append(sig)
    try:
        await worker.run()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return 0


async def run_worker(request: WorkerRequest) -> int:
    """Run the worker command; returns the exit code."""
    from ..workers import Worker

    if request.agent is not None and request.model is not None:
        fail("--agent and --model both name the agent: pass only one")
    if request.agent is not None and request.system is not None:
        fail("--system is for --model: an --agent factory sets its agent's system prompt itself")
    url = queue_url(request.log_option)
    if request.agent is not None:
        factory = load_factory(request.agent)
    else:  # --model, else the config's [default] model
        factory = await model_factory(
            request.model, config_path=request.config_path, system=request.system
        )
    worker = Worker(
        url,
        factory,
        concurrency=request.concurrency,
        lease_ms=request.lease_ms,
        renew_ms=request.renew_ms,
        grace_ms=request.grace_ms,
        say=say,
        until_idle=request.until_idle,
    )
    await (await open_queue(url)).close()  # an unusable log is a one-line error naming it
    return await _serve(worker)
