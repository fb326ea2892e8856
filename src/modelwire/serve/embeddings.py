"""`POST /v1/embeddings`: OpenAI's Embeddings API through `rt.embed`.

The body is OpenAI's (`model`, `input` a string or a list of strings, `dimensions`,
`encoding_format` `float` | `base64`, `user` ignored); token-id inputs are refused by name
(`UNSUPPORTED_CONTENT`: the gateway forwards text). The answer is OpenAI's
(`{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model",
"usage": {"prompt_tokens", "total_tokens"}}`), base64 vectors handed on as the adapter got
them (never decoded to floats and back). The checks are the model calls': the caller's key,
the routes it may use, its budget (an estimate of UTF-8 bytes / 4 input tokens at the model's
input price: the route config's `cost.input`, else modelwire's embedding-model table) and rate
limits, settled with the measured tokens and cost. Each request is one turn of its session:
`turn/start`, `gateway/request` (endpoint, model, key name, how many inputs — never the texts),
`step/start`, `request/context` (the input price), `assistant/message` without content and with
the input tokens as usage (what `sessions usage` prices), `step/end`, `turn/end`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

import msgspec
from aiohttp import web

from ..adapters.providers.embedding_models import known_embedding_model
from ..errors import HarnessError, LlmError
from ..retry.fallback_chain import FallbackTarget
from ..session.events import (
    AssistantMessage,
    RequestContext,
    StepEnd,
    StepStart,
    TurnCompleted,
    TurnEnd,
    TurnErrored,
    TurnStart,
)
from ..vocab import EmbedOptions, EmbedResult, Message, ModelPricing, ModelSource, TokenUsage
from .fields import bad, decode_body, get_int, get_str, require_str
from .gateway import Caller, Gateway, authenticate, targets
from .handlers import GATEWAY, SESSION_HEADER, error_response, read_body, session_of
from .ids import next_id
from .limits import Admission, nano_usd
from .problems import GatewayError, failure_error
from .record import GatewayRequestRecord

__all__ = ["ENDPOINT", "call_embeddings"]

ENDPOINT: Final = "/v1/embeddings"
_ENCODER: Final = msgspec.json.Encoder()


class _Ask(msgspec.Struct, frozen=True, kw_only=True):
    model: str
    inputs: tuple[str, ...]
    dimensions: int | None
    encoding: str


def _is_ids(item: object) -> bool:
    return (isinstance(item, int) and not isinstance(item, bool)) or isinstance(item, list)


def _parse(body: Mapping[str, object]) -> _Ask:
    model = require_str(body, "model", "")
    raw = body.get("input")
    if isinstance(raw, str):
        inputs: tuple[str, ...] = (raw,)
    elif isinstance(raw, list) and raw:
        if all(_is_ids(item) for item in raw):
            raise GatewayError(
                400, "UNSUPPORTED_CONTENT", "input: token ids are not served; send the text"
            )
        for i, item in enumerate(raw):
            if not isinstance(item, str):
                raise bad(f"input[{i}]", "must be a string")
            if not item:
                raise bad(f"input[{i}]", "must not be empty")
        inputs = tuple(raw)
    elif raw is None:
        raise bad("input", "is required")
    else:
        raise bad("input", "must be a string or a non-empty list of strings")
    if len(inputs) == 1 and not inputs[0]:
        raise bad("input", "must not be empty")
    dimensions = get_int(body, "dimensions", "")
    if dimensions is not None and dimensions < 1:
        raise bad("dimensions", "must be a positive integer")
    encoding = get_str(body, "encoding_format", "") or "float"
    if encoding not in ("float", "base64"):
        raise bad("encoding_format", f'must be "float" or "base64", not {encoding!r}')
    return _Ask(model=model, inputs=inputs, dimensions=dimensions, encoding=encoding)


async def _pricing(gateway: Gateway, target: FallbackTarget) -> ModelPricing | None:
    """The model's input price: the route config's, else the embedding-model table's."""
    try:
        info = await gateway.model_info(target)
    except GatewayError:
        info = None
    if info is not None and info.pricing is not None:
        return info.pricing
    known = known_embedding_model(target.model)
    if known is None or known.price is None:
        return None
    return ModelPricing(input=known.price, output=Decimal(0))


async def _admit(
    gateway: Gateway, caller: Caller, ask: _Ask, target: FallbackTarget, price: ModelPricing | None
) -> Admission | None:
    record = caller.record
    route_limit = gateway.config.limits.get(target.route)
    if gateway.ledger is None or (record is None and route_limit is None):
        return None
    if record is not None and record.budget_usd is not None and price is None:
        raise GatewayError(
            403,
            "BUDGET_EXCEEDED",
            f"the key {record.name!r} has a budget and {target} has no known price",
        )
    tokens = sum(max(1, len(text.encode()) // 4) for text in ask.inputs)
    cost = 0 if price is None else nano_usd(price.cost(TokenUsage(tokens, 0)))
    return await gateway.ledger.admit(
        record,
        gateway.clock(),
        cost,
        tokens,
        route=target.route,
        route_limit=route_limit,
    )


def _answer(ask: _Ask, result: EmbedResult) -> bytes:
    data = [
        {"object": "embedding", "index": i, "embedding": vector}
        for i, vector in enumerate(result.vectors)
    ]
    used = 0 if result.usage is None else result.usage.input_tokens
    body = {
        "object": "list",
        "data": data,
        "model": ask.model,
        "usage": {"prompt_tokens": used, "total_tokens": used},
    }
    return _ENCODER.encode(body)


async def _log(
    gateway: Gateway,
    sid: str,
    continued: bool,
    caller: Caller,
    ask: _Ask,
    target: FallbackTarget,
    price: ModelPricing | None,
    result: EmbedResult | None,
    failure: LlmError | None,
) -> None:
    turn = 1
    if continued:
        latest = await gateway.log.latest(sid, "turn/start")
        if latest is not None and isinstance(latest.data, TurnStart):
            turn = latest.data.turn + 1
    request = GatewayRequestRecord(
        turn=turn,
        endpoint=ENDPOINT,
        model=ask.model,
        stream=False,
        key=caller.name,
        inputs=len(ask.inputs),
    )
    events: list[msgspec.Struct] = [
        TurnStart(turn),
        request,
        StepStart(turn, 1),
        RequestContext(target.route, target.model, None, price),
    ]
    if result is not None:
        message = Message(next_id("msg_"), "assistant", (), ModelSource(target.route, target.model))
        events.append(
            AssistantMessage(
                turn=turn,
                step=1,
                attempt=1,
                message=message,
                usage=result.usage,
                source_event_seqs=(),
            )
        )
    reason = TurnCompleted() if failure is None else TurnErrored(failure.failure)
    events += [StepEnd(turn, 1), TurnEnd(turn, reason)]
    await gateway.log.append_many(sid, events)


async def call_embeddings(request: web.Request) -> web.StreamResponse:
    """Serve one embeddings request (module docstring)."""
    gateway = request.app[GATEWAY]
    started = time.perf_counter()
    status, code, route, key = 200, None, "-", "-"
    usage: TokenUsage | None = None
    cost: Decimal | None = None
    try:
        if gateway.draining:
            raise GatewayError(503, "SERVER", "the gateway is shutting down", retry_after_s=1)
        raw = await read_body(request, gateway)
        caller = await authenticate(gateway, request.headers, x_api_key=False)
        key = caller.name
        ask = _parse(decode_body(raw))
        target = targets(gateway, ask.model, caller)[0]
        route = target.route
        sid = session_of(request)
        price = await _pricing(gateway, target)
        admission = await _admit(gateway, caller, ask, target, price)
        result: EmbedResult | None = None
        failure: LlmError | None = None
        try:
            options = EmbedOptions(
                target.route,
                target.model,
                inputs=ask.inputs,
                dimensions=ask.dimensions,
                encoding_format="base64" if ask.encoding == "base64" else "float",
            )
            result = await gateway.runtime.embed(options)
            usage = result.usage
            cost = result.cost
            if cost is None and price is not None and usage is not None:
                cost = price.cost(usage)
        except LlmError as exc:
            failure = exc
        finally:
            if admission is not None and gateway.ledger is not None:
                spent = (
                    admission.reserved_nusd
                    if result is None and failure is None
                    else (0 if cost is None else nano_usd(cost))
                )
                tokens = 0 if usage is None else usage.total_tokens
                await gateway.ledger.settle(admission, spent, tokens)
        continued = SESSION_HEADER in request.headers
        if continued:  # the session's turns stay numbered in order, as the model calls'
            await gateway.enter_session(sid)
        try:
            await _log(gateway, sid, continued, caller, ask, target, price, result, failure)
        finally:
            if continued:
                gateway.leave_session(sid)
        if failure is not None:
            raise failure_error(failure.failure, str(target))
        assert result is not None
        return web.Response(
            body=_answer(ask, result),
            content_type="application/json",
            headers={SESSION_HEADER: sid},
        )
    except GatewayError as error:
        status, code = error.status, error.code
        return error_response("openai", error)
    except HarnessError as error:  # the log or the keys' database failed
        status, code = 503, error.code
        problem = GatewayError(503, error.code, f"the gateway's log failed: {error.message}")
        return error_response("openai", problem)
    finally:
        gateway.metrics.observe(
            endpoint=ENDPOINT,
            route=route,
            key=key,
            status=status,
            code=code,
            usage=usage,
            cost=cost,
            seconds=time.perf_counter() - started,
        )
