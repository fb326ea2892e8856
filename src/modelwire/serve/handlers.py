"""The request handlers: one model call per request, from the client's body to its reply.

`call_endpoint` runs the checks in order — no key in the URL, the body within the size limit,
the caller's key, the body's JSON and fields, the model and the routes the key may use, the
model's info (an unknown model is a 404 before anything is booked), the session id — then admits
the request against the key's budget and rate limits (`limits.py`), opens its turn in the log and
runs the upstream call (`upstream.py`). A streaming reply starts only once the call committed,
so every failure until then is a plain HTTP error in the client's shape. A client that goes away
mid-stream (a failed write, or the handler cancelled) cancels the upstream call; the turn records
it as aborted and the key is charged what was measured (its reservation when nothing was).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from aiohttp import web

from ..errors import HarnessError
from ..meter.estimate import estimate_message, estimate_system, estimate_tools
from ..session.ids import check_session_id
from ..vocab import Error, GenerateOptions, ResolvedModelInfo, TokenUsage
from .coalesce import CoalescingWriter
from .fields import decode_body
from .gateway import Caller, Gateway, authenticate, targets
from .limits import Admission, nano_usd
from .problems import GatewayError, Protocol, error_body
from .record import SessionRecorder, new_session_id
from .request import GatewayRequest
from .shapes import Reply, Shape
from .upstream import UpstreamCall

__all__ = [
    "GATEWAY",
    "GRACE_MS",
    "SESSION_HEADER",
    "call_endpoint",
    "error_response",
    "read_body",
    "session_of",
]

GATEWAY: Final = web.AppKey("modelwire_gateway", Gateway)
GRACE_MS: Final = web.AppKey("modelwire_grace_ms", int)
"""How long running requests may finish on shutdown (`[gateway] grace_ms`)."""
SESSION_HEADER: Final = "x-modelwire-session"
_URL_KEYS: Final = frozenset({"key", "api_key", "api-key", "access_token", "token", "x-api-key"})


def error_response(protocol: Protocol, error: GatewayError) -> web.Response:
    """The error reply in `protocol`'s shape."""
    headers = error.headers()
    if error.code == "BUDGET_EXCEEDED" or error.status in (401, 403):
        headers["x-should-retry"] = "false"  # the SDKs would retry a 429 otherwise
    return web.json_response(error_body(protocol, error), status=error.status, headers=headers)


async def read_body(request: web.Request, gateway: Gateway) -> bytes:
    if _URL_KEYS & {k.lower() for k in request.query}:
        raise GatewayError(
            400, "INVALID_REQUEST", "a key belongs in the Authorization header, never in the URL"
        )
    limit_s = gateway.config.read_timeout_ms / 1000
    try:
        async with asyncio.timeout(limit_s):
            return await request.read()
    except TimeoutError:
        raise GatewayError(
            408, "TIMEOUT", f"the request body did not arrive within {limit_s:g}s"
        ) from None
    except web.HTTPRequestEntityTooLarge:
        limit = gateway.config.max_body_bytes
        raise GatewayError(
            413, "INVALID_REQUEST", f"the request body is over the gateway's limit of {limit} bytes"
        ) from None


def _estimate(options: GenerateOptions, info: ResolvedModelInfo) -> tuple[int, int]:
    """The request's estimated tokens and its worst-case cost in nano-USD (0: unpriced)."""
    prompt = estimate_system(options.system) + estimate_tools(options.tools)
    prompt += sum(estimate_message(m) for m in options.messages)
    output = options.max_tokens or info.default_max_tokens or 0
    tokens = prompt + output
    if info.pricing is None:
        return tokens, 0
    return tokens, nano_usd(info.pricing.cost(TokenUsage(prompt, output)))


async def _admit(
    gateway: Gateway, caller: Caller, options: GenerateOptions, info: ResolvedModelInfo, where: str
) -> Admission | None:
    record = caller.record
    route = where.split(":", 1)[0]
    route_limit = gateway.config.limits.get(route)
    if gateway.ledger is None or (record is None and route_limit is None):
        return None
    if record is not None and record.budget_usd is not None and info.pricing is None:
        raise GatewayError(
            403,
            "BUDGET_EXCEEDED",
            f"the key {record.name!r} has a budget and {where} has no known price",
        )
    tokens, cost = _estimate(options, info)
    return await gateway.ledger.admit(
        record, gateway.clock(), cost, tokens, route=route, route_limit=route_limit
    )


def session_of(request: web.Request) -> str:
    named = request.headers.get(SESSION_HEADER)
    if named is None:
        return new_session_id()
    try:
        return check_session_id(named)
    except HarnessError as exc:
        raise GatewayError(400, "INVALID_SESSION_ID", f"{SESSION_HEADER}: {exc.message}") from None


async def _stream(
    request: web.Request, shape: Shape, reply: Reply, call: UpstreamCall, sid: str
) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream; charset=utf-8",
            "Cache-Control": "no-cache",
            SESSION_HEADER: sid,
        }
    )
    await response.prepare(request)
    encoder = shape.encoder(reply)
    writer = CoalescingWriter(response)  # one write per upstream read, not one per event
    try:
        await writer.add(encoder.start())
        async for chunk in call.chunks():
            data = encoder.push(chunk)
            if data:
                await writer.add(data)
        await writer.close()
    except BaseException:
        writer.abort()
        raise
    await response.write_eof()
    return response


@dataclass(slots=True)
class _Outcome:
    """What the metrics count of one request, filled in as it goes."""

    endpoint: str
    started: float
    status: int = 200
    code: str | None = None
    route: str = "-"
    key: str = "-"

    def observe(self, gateway: Gateway, usage: TokenUsage | None, cost: Decimal | None) -> None:
        gateway.metrics.observe(
            endpoint=self.endpoint,
            route=self.route,
            key=self.key,
            status=self.status,
            code=self.code,
            usage=usage,
            cost=cost,
            seconds=time.perf_counter() - self.started,
        )


async def call_endpoint(request: web.Request, shape: Shape) -> web.StreamResponse:
    """Serve one model call on `shape`'s protocol (module docstring)."""
    gateway = request.app[GATEWAY]
    outcome = _Outcome(shape.endpoint, time.perf_counter())
    ended = False  # the call's end observes the metrics itself
    try:
        if gateway.draining:
            raise GatewayError(503, "SERVER", "the gateway is shutting down", retry_after_s=1)
        raw = await read_body(request, gateway)
        caller = await authenticate(gateway, request.headers, x_api_key=shape.x_api_key)
        outcome.key = caller.name
        parsed: GatewayRequest = shape.parse(decode_body(raw))
        chain = targets(gateway, parsed.model, caller)
        outcome.route = chain[0].route
        info = await gateway.model_info(chain[0])
        sid = session_of(request)
        admission = await _admit(gateway, caller, parsed.options, info, str(chain[0]))
        recorder = SessionRecorder(gateway.log, sid)
        call = UpstreamCall(gateway.runtime, recorder, parsed, chain, gateway.model_info_or_none)
        continued = SESSION_HEADER in request.headers
        if continued:
            try:
                await gateway.enter_session(sid)
            except BaseException:
                await _settle(gateway, admission, None, None, cancelled=False)
                raise
        cancelled = True
        try:
            recorder.defer(  # the log's round trips overlap the upstream call's first byte
                recorder.begin(
                    shape.endpoint,
                    parsed.model,
                    parsed.stream,
                    caller.name,
                    parsed.options,
                    continued=continued,
                )
            )
            await call.open()
            attempted = call.attempted
            assert attempted is not None
            outcome.route = attempted.target.route
            reply = shape.reply(parsed, outcome.route, attempted.target.model)
            if parsed.stream:
                try:
                    result = await _stream(request, shape, reply, call, sid)
                except ConnectionError:  # the client went away mid-stream
                    outcome.status, outcome.code = 499, "ABORTED"
                    return web.Response(status=499)
            else:
                async for _ in call.chunks():
                    pass
                body = shape.whole(reply, call.assembler)
                result = web.json_response(body, headers={SESSION_HEADER: sid})
            cancelled = False
            return result
        except GatewayError as error:
            cancelled = False
            outcome.status, outcome.code = error.status, error.code
            raise
        finally:
            if cancelled and outcome.code is None:
                outcome.status, outcome.code = 499, "ABORTED"
            ended = True
            # tracked: a client that closes its connection right after the last byte cancels
            # this handler, never the turn's end, and shutdown waits for it
            ending = _end(gateway, call, admission, cancelled, outcome, sid if continued else None)
            await asyncio.shield(gateway.track(ending))
    except GatewayError as error:
        outcome.status, outcome.code = error.status, error.code
        return error_response(shape.protocol, error)
    except HarnessError as error:  # the log or the keys' database failed
        outcome.status, outcome.code = 503, error.code
        problem = GatewayError(503, error.code, f"the gateway's log failed: {error.message}")
        return error_response(shape.protocol, problem)
    finally:
        if not ended:
            outcome.observe(gateway, None, None)


async def _end(
    gateway: Gateway,
    call: UpstreamCall,
    admission: Admission | None,
    cancelled: bool,
    outcome: _Outcome,
    session: str | None,
) -> None:
    usage: TokenUsage | None = None
    cost: Decimal | None = None
    try:
        try:
            usage = await call.close(cancelled=cancelled)
        finally:  # the reservation is settled even when the log failed
            measured = usage if usage is not None else call.assembler.usage
            cost = call.cost(measured)
            await _settle(gateway, admission, measured, cost, cancelled)
        finish = call.assembler.finish
        if isinstance(finish, Error) and outcome.code is None:
            outcome.code = finish.failure.code  # failed after the reply started
    finally:
        if session is not None:
            gateway.leave_session(session)
        outcome.observe(gateway, usage, cost)


async def _settle(
    gateway: Gateway,
    admission: Admission | None,
    usage: TokenUsage | None,
    cost: Decimal | None,
    cancelled: bool,
) -> None:
    if admission is not None and gateway.ledger is not None:
        if usage is None and cancelled:
            spent, tokens = admission.reserved_nusd, admission.reserved_tokens
        else:
            spent = 0 if cost is None else nano_usd(cost)
            tokens = 0 if usage is None else usage.total_tokens
        await gateway.ledger.settle(admission, spent, tokens)
