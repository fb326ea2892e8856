"""The wire side of provider batch jobs: request lines out, result lines in.

OpenAI Batch API (API reference "Batch" and "Files"): a JSONL input file of ``{"custom_id",
"method": "POST", "url": "/v1/chat/completions", "body"}`` lines uploaded to ``/v1/files``
(``purpose=batch``); results are output-file lines ``{"id", "custom_id", "response":
{"status_code", "request_id", "body"}, "error"}``, each body a chat completion object.
Anthropic Message Batches (API reference "Message Batches"): ``{"requests": [{"custom_id",
"params"}]}``; result lines ``{"custom_id", "result": {"type": "succeeded", "message"} |
{"type": "errored", "error": {"error": {"type", "message"}}} | {"type": "canceled"} |
{"type": "expired"}}``.

Gemini API batch mode (API reference "Batch API"): ``{"batch": {"displayName", "inputConfig":
{"requests": {"requests": [{"request": GenerateContentRequest, "metadata": {"key"}}]}}}}`` to
``models/{model}:batchGenerateContent``; the ``batches/…`` operation's ``response.
inlinedResponses.inlinedResponses`` holds a ``response`` (GenerateContentResponse) or an
``error`` per request, in request order.

Bodies are the chat protocols' own (the same builder as a streaming call) without their
``stream`` fields; a custom id is ``r<index>``. A result line that cannot be read fails its own
request (``MALFORMED_RESPONSE``) and the rest are read; a request no line answers fails too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from ...errors import ErrorCode
from ...runtime import GenerateResult
from ...vocab import (
    Aborted,
    ContentBlock,
    Error,
    FinishReason,
    LlmFailure,
    MaxTokens,
    ModelSource,
    ReasoningBlock,
    Stop,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolCalls,
    assistant_message,
)
from ...wire.status import failure_for_status

__all__ = ["custom_id", "read_results", "request_line"]

_STREAM_FIELDS: Final = ("stream", "stream_options")
_ANTHROPIC_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def custom_id(index: int) -> str:
    """The custom id of request `index`."""
    return f"r{index}"


def request_line(api: str, index: int, body: bytes) -> dict[str, object]:
    """One batch entry of a built streaming `body` (its stream fields dropped)."""
    params = json.loads(body)
    for name in _STREAM_FIELDS:
        params.pop(name, None)
    if api == "gemini":  # an InlinedRequest: answers come back in request order
        return {"request": params, "metadata": {"key": custom_id(index)}}
    if api == "openai":
        return {
            "custom_id": custom_id(index),
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": params,
        }
    return {"custom_id": custom_id(index), "params": params}


def _failure(message: str, code: str, provider: str, model: str) -> GenerateResult:
    return _result([], None, Error(LlmFailure(message, code)), provider, model)


def _result(
    blocks: list[ContentBlock],
    usage: TokenUsage | None,
    finish: FinishReason,
    provider: str,
    model: str,
) -> GenerateResult:
    message = assistant_message(blocks, ModelSource(provider, model))
    return GenerateResult(message=message, usage=usage, finish=finish, replay_state=None)


def _openai(line: Mapping[str, object], provider: str, model: str) -> GenerateResult:
    response = line.get("response")
    error = line.get("error")
    if not isinstance(response, Mapping):
        text = json.dumps(error) if error is not None else "no response"
        message = f'provider "{provider}" batch request failed: {text}'
        return _failure(message, ErrorCode.SERVER, provider, model)
    status = response.get("status_code")
    body = response.get("body")
    if not isinstance(status, int) or not isinstance(body, Mapping):
        raise ValueError("response without status_code and body")
    if not 200 <= status < 300:
        err = failure_for_status(status, json.dumps(body), {}, provider=provider)
        return _result(
            [], None, Error(err.failure or LlmFailure(err.message, err.code)), provider, model
        )
    choice = body["choices"][0]
    message = choice["message"]
    blocks: list[ContentBlock] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        blocks.append(ReasoningBlock(reasoning))
    content = message.get("content")
    if isinstance(content, str) and content:
        blocks.append(TextBlock(content))
    for call in message.get("tool_calls") or ():
        function = call["function"]
        blocks.append(ToolCallBlock(call["id"], function["name"], function["arguments"]))
    raw = body.get("usage") or {}
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    usage = TokenUsage(
        int(raw.get("prompt_tokens", 0)) - int(cached),
        int(raw.get("completion_tokens", 0)),
        cache_read_tokens=int(cached) or None,
    )
    reason = choice.get("finish_reason")
    finish: FinishReason = Stop()
    if reason == "tool_calls":
        finish = ToolCalls()
    elif reason == "length":
        finish = MaxTokens()
    elif reason == "content_filter":
        finish = Error(LlmFailure("the answer was filtered", ErrorCode.CONTENT_FILTER))
    return _result(blocks, usage, finish, provider, model)


def _anthropic(line: Mapping[str, object], provider: str, model: str) -> GenerateResult:
    result = line["result"]
    if not isinstance(result, Mapping):
        raise ValueError("result is not an object")
    kind = result.get("type")
    if kind == "canceled":
        return _result(
            [],
            None,
            Aborted(LlmFailure("the batch was canceled", ErrorCode.ABORTED)),
            provider,
            model,
        )
    if kind == "expired":
        failure = LlmFailure("the batch expired before this request ran", ErrorCode.TIMEOUT)
        return _result([], None, Error(failure), provider, model)
    if kind == "errored":
        inner = (result.get("error") or {}).get("error") or {}
        status = _ANTHROPIC_STATUS.get(str(inner.get("type")), 500)
        err = failure_for_status(status, json.dumps({"error": inner}), {}, provider=provider)
        return _result(
            [], None, Error(err.failure or LlmFailure(err.message, err.code)), provider, model
        )
    if kind != "succeeded":
        raise ValueError(f"unknown result type {kind!r}")
    message = result["message"]
    blocks: list[ContentBlock] = []
    for part in message["content"]:
        if part["type"] == "text":
            blocks.append(TextBlock(part["text"]))
        elif part["type"] == "thinking":
            blocks.append(ReasoningBlock(part["thinking"]))
        elif part["type"] == "tool_use":
            blocks.append(ToolCallBlock(part["id"], part["name"], json.dumps(part["input"])))
    raw = message.get("usage") or {}
    usage = TokenUsage(
        int(raw.get("input_tokens", 0)),
        int(raw.get("output_tokens", 0)),
        cache_read_tokens=raw.get("cache_read_input_tokens") or None,
        cache_write_tokens=raw.get("cache_creation_input_tokens") or None,
    )
    stop = message.get("stop_reason")
    finish: FinishReason = Stop()
    if stop == "tool_use":
        finish = ToolCalls()
    elif stop == "max_tokens":
        finish = MaxTokens()
    elif stop == "refusal":
        finish = Error(LlmFailure("the model refused", ErrorCode.CONTENT_FILTER))
    return _result(blocks, usage, finish, provider, model)


_GEMINI_FILTERED: Final = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def _gemini(item: Mapping[str, object], index: int, provider: str, model: str) -> GenerateResult:
    """One InlinedResponse: a GenerateContentResponse, or a Status error."""
    error = item.get("error")
    if isinstance(error, Mapping):
        status = error.get("code")
        code = status if isinstance(status, int) and 400 <= status < 600 else 500
        err = failure_for_status(code, json.dumps({"error": error}), {}, provider=provider)
        return _result(
            [], None, Error(err.failure or LlmFailure(err.message, err.code)), provider, model
        )
    response = item["response"]
    if not isinstance(response, Mapping):
        raise ValueError("response is not an object")
    candidate = response["candidates"][0]
    blocks: list[ContentBlock] = []
    calls = 0
    for part in (candidate.get("content") or {}).get("parts") or ():
        if "functionCall" in part:
            call = part["functionCall"]
            calls += 1
            args = json.dumps(call.get("args") or {})
            blocks.append(ToolCallBlock(f"call_{index}_{calls}", call["name"], args))
        elif isinstance(part.get("text"), str):
            kind = ReasoningBlock if part.get("thought") else TextBlock
            blocks.append(kind(part["text"]))
    meta = response.get("usageMetadata") or {}
    cached = int(meta.get("cachedContentTokenCount") or 0)
    thoughts = int(meta.get("thoughtsTokenCount") or 0)
    usage = TokenUsage(
        int(meta.get("promptTokenCount") or 0) - cached,
        int(meta.get("candidatesTokenCount") or 0) + thoughts,
        cache_read_tokens=cached or None,
        reasoning_tokens=thoughts or None,
    )
    reason = candidate.get("finishReason")
    finish: FinishReason = ToolCalls() if calls else Stop()
    if reason == "MAX_TOKENS":
        finish = MaxTokens()
    elif reason in _GEMINI_FILTERED:
        finish = Error(LlmFailure(f"the answer was blocked ({reason})", ErrorCode.CONTENT_FILTER))
    return _result(blocks, usage, finish, provider, model)


def _read_gemini(
    documents: Sequence[bytes], count: int, provider: str, model: str
) -> list[GenerateResult]:
    """The inlined responses of a Gemini batch operation, in request order."""
    out: list[GenerateResult] = []
    try:
        operation = json.loads(documents[0]) if documents else {}
        inlined = operation["response"]["inlinedResponses"]["inlinedResponses"]
    except (ValueError, KeyError, TypeError) as exc:
        inlined = []
        why = f"the batch operation holds no inlined responses ({exc})"
    else:
        why = "no inlined response answers it"
    for index in range(count):
        item = inlined[index] if index < len(inlined) else None
        try:
            if not isinstance(item, Mapping):
                raise ValueError(why)
            out.append(_gemini(item, index, provider, model))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            where = f'provider "{provider}" batch response {index}: {exc}'
            out.append(_failure(where, ErrorCode.MALFORMED_RESPONSE, provider, model))
    return out


def read_results(
    api: str, documents: Sequence[bytes], count: int, *, provider: str, model: str
) -> list[GenerateResult]:
    """One result per request, in request order, from the result files' lines."""
    if api == "gemini":
        return _read_gemini(documents, count, provider, model)
    found: dict[int, GenerateResult] = {}
    bad: list[str] = []
    for document in documents:
        for number, raw in enumerate(document.split(b"\n"), start=1):
            if not raw.strip():
                continue
            index: int | None = None
            try:
                line = json.loads(raw)
                cid = line.get("custom_id") if isinstance(line, dict) else None
                if isinstance(cid, str) and cid.startswith("r") and cid[1:].isdigit():
                    index = int(cid[1:])
                if index is None or not 0 <= index < count:
                    raise ValueError(f"custom_id {cid!r} names no request")
                parse = _openai if api == "openai" else _anthropic
                found[index] = parse(line, provider, model)
            except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
                where = f"result line {number}: {exc}"
                bad.append(where)
                if index is not None and 0 <= index < count:
                    found[index] = _failure(
                        f'provider "{provider}" batch {where}',
                        ErrorCode.MALFORMED_RESPONSE,
                        provider,
                        model,
                    )
    out = []
    for index in range(count):
        result = found.get(index)
        if result is None:
            why = f" ({'; '.join(bad[:3])})" if bad else ""
            result = _failure(
                f'provider "{provider}" batch has no readable result for request {index}{why}',
                ErrorCode.MALFORMED_RESPONSE,
                provider,
                model,
            )
        out.append(result)
    return out
