"""`create_app`: the gateway as an `aiohttp.web.Application`, for `modelwire serve` or embedding.

Routes: `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages` (the model calls,
`handlers.py`), `GET /v1/models`, `GET /healthz`, `GET /metrics`, the admin key's
`POST /v1/keys`, `GET /v1/keys` and `DELETE /v1/keys/{name}` (`admin.py`), `POST /v1/embeddings`
(`embeddings.py`), the agents' `/v1/agents/{name}/…` when `agents` are given (`agents.py`). The
log and the keys' database open when the app starts and close with it. Bodies over `[gateway]
max_body_bytes` are a 413.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Final

from aiohttp import web

from ..errors import ErrorCode, HarnessError
from ..runtime import LlmRuntime
from ..session import open_log
from ..session.log import SessionLog
from .admin import add_admin_routes
from .config import read_settings, split_settings
from .database import KeyDatabase
from .embeddings import ENDPOINT as EMBEDDINGS
from .embeddings import call_embeddings
from .gateway import Gateway, authenticate
from .handlers import GATEWAY, GRACE_MS, call_endpoint, error_response
from .keystore import open_keys
from .models import model_list
from .problems import GatewayError, Protocol
from .shapes import CHAT, MESSAGES, RESPONSES, Shape
from .tracing import RequestSpans

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from .agents import AgentFactory

__all__ = ["ADMIN_KEY_ENV", "create_app"]

ADMIN_KEY_ENV: Final = "MODELWIRE_ADMIN_KEY"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _endpoint(shape: Shape, spans: RequestSpans | None) -> Handler:
    if spans is None:

        async def handle(request: web.Request) -> web.StreamResponse:
            return await call_endpoint(request, shape)

        return handle

    async def traced(request: web.Request) -> web.StreamResponse:
        with spans.span(request.method, shape.endpoint, request.headers) as span:
            response = await call_endpoint(request, shape)
            if span is not None:
                span.set_attribute("http.response.status_code", response.status)
            return response

    return traced


async def _models(request: web.Request) -> web.StreamResponse:
    gateway = request.app[GATEWAY]
    protocol: Protocol = "anthropic" if "anthropic-version" in request.headers else "openai"
    try:
        caller = await authenticate(gateway, request.headers, x_api_key=True)
        return web.json_response(await model_list(gateway, caller))
    except GatewayError as error:
        return error_response(protocol, error)


async def _healthz(request: web.Request) -> web.StreamResponse:
    if request.app[GATEWAY].draining:
        return web.json_response({"status": "draining"}, status=503)
    return web.json_response({"status": "ok"})


async def _metrics(request: web.Request) -> web.StreamResponse:
    text = request.app[GATEWAY].metrics.render()
    return web.Response(text=text, content_type="text/plain", charset="utf-8")


def _is_url(log: object) -> bool:
    return isinstance(log, str)


def create_app(
    config: str | os.PathLike[str] | Mapping[str, object] | None = None,
    log: str | SessionLog = "memory:",
    agents: Mapping[str, object] | None = None,
    *,
    runtime: LlmRuntime | None = None,
    admin_key: str | None = None,
    env: Mapping[str, str] | None = None,
    clock: Callable[[], int] | None = None,
    telemetry: bool = False,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    """The gateway app on `config`'s routes (a file path or a mapping with `[providers]`,
        `[default]`, `[deepseek]` and `[gateway]`) and the log `log` (a URL; keys, budgets and rate
        limits live in the same database when it is SQLite or PostgreSQL; a `SessionLog` instance
        serves without keys). `runtime` replaces the one `open_runtime` builds from `config`;
        `admin_key` defaults to `$MODELWIRE_ADMIN_KEY`; `env` replaces the environment for route
        keys. `telemetry` instruments the runtime (`modelwire.telemetry.instrument`: one
    OpenTelemetry client span and the client metrics per upstream call) and gives every model
    request a server span (`tracing.py`), on `tracer_provider` (None: the global one), when
    OpenTelemetry is installed; nothing otherwise. `agents` maps a name to `FACTORY(log) ->
    Agent` (sync or async): the `/v1/agents/{name}/…` endpoints (`agents.py`)."""
    from ..agent.setup import open_runtime

    settings, gateway_config = split_settings(read_settings(config))
    rt = runtime if runtime is not None else open_runtime(settings, env=env)
    spans = None
    if telemetry:
        from ..telemetry import instrument

        instrument(rt, tracer_provider=tracer_provider)
        spans = RequestSpans(tracer_provider)
    app = web.Application(client_max_size=gateway_config.max_body_bytes)
    app[GRACE_MS] = gateway_config.grace_ms
    admin = admin_key if admin_key is not None else os.environ.get(ADMIN_KEY_ENV) or None
    routes = tuple(p.id for p in rt.list_providers())
    configured = settings.get("providers")
    declared = tuple(configured) if isinstance(configured, Mapping) else ()

    async def start(app: web.Application) -> None:
        session_log = await open_log(log) if isinstance(log, str) else log
        driver: KeyDatabase | None = None
        if isinstance(log, str) and not log.lower().startswith("memory"):
            driver = await open_keys(log)
        gateway = Gateway(rt, session_log, driver, gateway_config, routes, admin)
        gateway.declared = declared
        if clock is not None:
            gateway.clock = clock
        app[GATEWAY] = gateway

    async def stop(app: web.Application) -> None:
        gateway = app[GATEWAY]
        await gateway.drain()
        if gateway.driver is not None:
            await gateway.driver.close()
        if isinstance(log, str):
            await gateway.log.close()
        from ..wire.http import close_sessions

        await close_sessions()

    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    for shape in (CHAT, RESPONSES, MESSAGES):
        app.router.add_post(shape.endpoint, _endpoint(shape, spans))
    app.router.add_post(EMBEDDINGS, call_embeddings)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/healthz", _healthz)
    app.router.add_get("/metrics", _metrics)
    add_admin_routes(app)
    if agents:
        from .agents import add_agent_routes

        add_agent_routes(app, _factories(agents))
    return app


def _factories(agents: Mapping[str, object]) -> dict[str, AgentFactory]:
    out: dict[str, AgentFactory] = {}
    for name, factory in agents.items():
        if not callable(factory) or not name or "/" in name:
            raise HarnessError(
                f"create_app: agents[{name!r}] must be a FACTORY(log) -> Agent under a name "
                "without '/'",
                ErrorCode.INVALID_ARGS,
            )
        out[name] = factory
    return out
