"""`google-generative-ai` (the Gemini API): ``POST {base_url}/models/{model}:streamGenerateContent
?alt=sse`` with the key in ``x-goog-api-key`` (never in the URL), and the `PROTOCOL` the registry
loads.

History becomes ``contents`` (roles ``user`` / ``model``): text and inline images; a replayed
assistant turn's thought summaries (``thought: true``), text and function calls each with the
``thoughtSignature`` Gemini attached, sent back only to the provider and model that produced it
(`transform.prepare_messages` strips every signature of foreign history, and a signature that is
not base64 is never sent); tool results as ``functionResponse`` parts of one user turn (``output``
or ``error``), their images nested in the response on Gemini 3 and in a following user turn
before. Gemini 3 validates the signature of the first function call of each model turn: a turn
that carries none (foreign history, a hand-built transcript) gets Google's documented
``skip_thought_signature_validator`` value there, as pi-ai sends.

Thinking follows pi-ai per model generation: Gemini 3 Pro / Flash and Gemma 4 take a
``thinkingLevel``, the others (2.x) a ``thinkingBudget``; effort off (or unset) on a reasoning
model sends the lowest setting the model accepts (budget 0; Gemini 3 cannot switch thinking off).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import msgspec
from msgspec import UNSET, UnsetType

from ....errors import ErrorCode, LlmError
from ....never import assert_never
from ....vocab import StructuredOutputSupport
from ...shape import merge_provider_options
from ..context import (
    NAssistant,
    NContext,
    NDocument,
    NImage,
    NPart,
    NText,
    NThinking,
    NToolCall,
    NToolResult,
    NUser,
    strip_surrogates,
)
from ..materialize import ModelDescriptor
from .google_body import (
    OWNED_FIELDS,
    Body,
    Content,
    FileData,
    FilePart,
    FunctionCall,
    FunctionCallingConfig,
    FunctionCallPart,
    FunctionDeclaration,
    FunctionResponse,
    FunctionResponsePart,
    GenerationConfig,
    InlineData,
    InlinePart,
    Part,
    SystemInstruction,
    TextPart,
    ThinkingConfig,
    ToolConfig,
    Tools,
    one_spelling,
)
from .google_errors import refine_google_http_error
from .google_stream import GoogleTranslator
from .request import BuiltRequest, RequestOptions, join_url, safe_tool_id
from .spec import WireProtocol
from .transform import kept_parts, output_cap, prepare_messages

__all__ = ["PROTOCOL", "SKIP_SIGNATURE", "build_google_request", "google_structured_output"]

SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
"""Google's documented ``thoughtSignature`` for a Gemini 3 function call the model did not sign."""

_BASE64: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_MAJOR: Final = re.compile(r"gemini(?:-live)?-(\d+)")
_PRO_3: Final = re.compile(r"gemini-3(?:\.\d+)?-pro")
_FLASH_3: Final = re.compile(r"gemini-3(?:\.\d+)?-flash")
_GEMMA_4: Final = re.compile(r"gemma-?4")
_FLASH_ALIASES: Final = ("gemini-flash-latest", "gemini-flash-lite-latest")
_CHOICE_MODES: Final = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_LEVELS: Final = {"minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM", "high": "HIGH"}
_PRO_LEVELS: Final = {"minimal": "LOW", "low": "LOW", "medium": "HIGH", "high": "HIGH"}
_GEMMA_LEVELS: Final = {"minimal": "MINIMAL", "low": "MINIMAL", "medium": "HIGH", "high": "HIGH"}
_BUDGETS: Final = (  # (id fragment, budgets by level), first match wins
    ("2.5-pro", {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}),
    ("2.5-flash-lite", {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}),
    ("2.5-flash", {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}),
)


def _name(model_id: str) -> str:
    """The model's bare lower-case name (a ``models/`` or ``publishers/...`` prefix dropped)."""
    return model_id.rsplit("/", 1)[-1].lower()


def _major(model_id: str) -> int | None:
    found = _MAJOR.match(_name(model_id))
    return int(found.group(1)) if found else None


def _validates_signatures(model_id: str) -> bool:
    """Gemini 3 (and the ``-latest`` Flash aliases pi-ai serves as Gemini 3) rejects a model
    turn whose first function call carries no signature."""
    major = _major(model_id)
    return (major is not None and major >= 3) or _name(model_id) in _FLASH_ALIASES


def _signature(value: str | None) -> str | UnsetType:
    """A signature fit to send back (non-empty base64, as Google's bytes field needs)."""
    if value and len(value) % 4 == 0 and _BASE64.fullmatch(value):
        return value
    return UNSET


def _requires_call_id(model_id: str) -> bool:
    """Models behind Google's API that need ids on function calls and responses."""
    return _name(model_id).startswith(("claude-", "gpt-oss-"))


def _user_parts(content: str | tuple[NPart, ...]) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(text=strip_surrogates(content))] if content.strip() else []
    parts: list[Part] = []
    for item in content:
        if isinstance(item, NText):
            if item.text:
                parts.append(TextPart(text=strip_surrogates(item.text)))
        elif isinstance(item, NDocument) and item.url is not None:
            parts.append(FilePart(FileData(item.mime, item.url)))
        else:  # an image, a document's bytes, audio: inline data
            parts.append(InlinePart(InlineData(item.mime, item.data or "")))
    return parts


def _model_parts(message: NAssistant, model: ModelDescriptor) -> list[Part]:
    parts: list[Part] = []
    with_id = _requires_call_id(model.id)
    first_call: int | None = None
    signed_call = False
    kept = kept_parts(message) if message.opaque else {}
    for at, item in enumerate(message.content):
        if kept:
            parts.extend(kept.pop(at, ()))
        match item:
            case NText():
                if item.text.strip():
                    text = strip_surrogates(item.text)
                    parts.append(TextPart(text=text, thoughtSignature=_signature(item.signature)))
            case NThinking():
                # same-model thinking only: prepare_messages turned foreign thinking into text
                if item.text.strip() and not item.redacted:
                    signature = _signature(item.signature)
                    text = strip_surrogates(item.text)
                    parts.append(TextPart(thought=True, text=text, thoughtSignature=signature))
            case NToolCall():
                signature = _signature(item.thought_signature)
                signed_call = signed_call or signature is not UNSET
                if first_call is None:
                    first_call = len(parts)
                call = FunctionCall(
                    name=item.name, args=item.arguments, id=item.id if with_id else UNSET
                )
                parts.append(FunctionCallPart(functionCall=call, thoughtSignature=signature))
            case _:
                assert_never(item, "Gemini model part")
    for rest in kept.values():  # the parts after the last block
        parts.extend(rest)
    if first_call is not None and not signed_call and _validates_signatures(model.id):
        unsigned = parts[first_call]
        if isinstance(unsigned, FunctionCallPart):
            call_part = FunctionCallPart(
                functionCall=unsigned.functionCall, thoughtSignature=SKIP_SIGNATURE
            )
            parts[first_call] = call_part
    return parts


def _tool_result(message: NToolResult, model: ModelDescriptor, contents: list[Content]) -> None:
    """Append one tool result: to the user turn of function responses it follows, or a new one."""
    text = "\n".join(p.text for p in message.content if isinstance(p, NText))
    images = (
        [InlinePart(InlineData(p.mime, p.data)) for p in message.content if isinstance(p, NImage)]
        if "image" in model.input
        else []
    )
    major = _major(model.id)
    nested = major is None or major >= 3  # Gemini 3 takes images inside the function response
    value = strip_surrogates(text) if text else ("(see attached image)" if images else "")
    response = FunctionResponse(
        name=message.tool_name,
        response={"error": value} if message.is_error else {"output": value},
        parts=images if images and nested else UNSET,
        id=message.tool_call_id if _requires_call_id(model.id) else UNSET,
    )
    last = contents[-1] if contents else None
    if (
        last is not None
        and last.role == "user"
        and any(isinstance(p, FunctionResponsePart) for p in last.parts)
    ):
        last.parts.append(FunctionResponsePart(response))
    else:
        contents.append(Content("user", [FunctionResponsePart(response)]))
    if images and not nested:
        contents.append(Content("user", [TextPart(text="Tool result image:"), *images]))


def _contents(ctx: NContext, model: ModelDescriptor) -> list[Content]:
    with_id = _requires_call_id(model.id)
    prepared = prepare_messages(
        ctx, model, (lambda raw: safe_tool_id(raw, 64)) if with_id else (lambda raw: raw)
    )
    contents: list[Content] = []
    for message in prepared:
        match message:
            case NToolResult():
                _tool_result(message, model, contents)
            case NUser():
                parts = _user_parts(message.content)
                if parts:
                    contents.append(Content("user", parts))
            case NAssistant():
                parts = _model_parts(message, model)
                if parts:
                    contents.append(Content("model", parts))
            case _:
                assert_never(message, "Gemini content")
    return contents


def _level_model(model_id: str) -> dict[str, str] | None:
    """The thinking levels of a model that takes ``thinkingLevel`` (None: it takes a budget)."""
    name = _name(model_id)
    if _PRO_3.search(name):
        return _PRO_LEVELS
    if _GEMMA_4.search(name):
        return _GEMMA_LEVELS
    if _FLASH_3.search(name) or name in _FLASH_ALIASES:
        return _LEVELS
    return None


def _thinking(model: ModelDescriptor, options: RequestOptions) -> ThinkingConfig | UnsetType:
    if not model.reasoning:
        return UNSET
    level_map = model.thinking_level_map or {}
    effort = options.effort
    levels = _level_model(model.id)
    if effort is None or effort == "off":
        if "off" in level_map and level_map["off"] is None:
            return UNSET  # the model declares it has no off switch: send nothing
        if levels is None:
            return ThinkingConfig(thinkingBudget=0)
        # Gemini 3 cannot switch thinking off: the lowest level, its summaries not requested
        return ThinkingConfig(thinkingLevel="LOW" if levels is _PRO_LEVELS else "MINIMAL")
    level = effort if effort in _LEVELS else "high"  # xhigh / max: the highest Gemini has
    if levels is not None:
        mapped = level_map.get(effort)
        wire = mapped.upper() if isinstance(mapped, str) and mapped else levels[level]
        return ThinkingConfig(includeThoughts=True, thinkingLevel=wire)
    custom = (options.thinking_budgets or {}).get(level)
    if custom is None:
        name = _name(model.id)
        table = next((b for fragment, b in _BUDGETS if fragment in name), None)
        custom = table[level] if table is not None else -1  # -1: Gemini's dynamic budget
    return ThinkingConfig(includeThoughts=True, thinkingBudget=custom)


def _answer_shape(body: Body, options: RequestOptions, route: str) -> None:
    """Tool choice, parallel tool calls and structured output on the Gemini API."""
    choice = options.tool_choice
    if choice is not None:
        if isinstance(choice, str):
            config = FunctionCallingConfig(mode=_CHOICE_MODES[choice])
        else:
            config = FunctionCallingConfig(mode="ANY", allowedFunctionNames=[choice.name])
        body.toolConfig = ToolConfig(config)
    if options.parallel_tool_calls is False:
        raise LlmError(
            f'route "{route}": parallel_tool_calls=False cannot be honoured on '
            "google-generative-ai (Gemini has no switch for parallel function calls)",
            ErrorCode.UNSUPPORTED_OPTION,
        )
    out = options.output
    if out is not None:
        schema: object = out.schema
        if out.description and isinstance(schema, Mapping) and "description" not in schema:
            schema = {**schema, "description": out.description}
        body.generationConfig.responseMimeType = "application/json"
        body.generationConfig.responseJsonSchema = schema


def build_google_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The ``streamGenerateContent`` request for `model` (no credentials: the adapter adds
    ``x-goog-api-key``)."""
    config = GenerationConfig(maxOutputTokens=output_cap(ctx, model, options.max_tokens))
    if options.temperature is not None:
        config.temperature = options.temperature
    config.thinkingConfig = _thinking(model, options)
    body = Body(contents=_contents(ctx, model), generationConfig=config)
    if ctx.system:
        body.systemInstruction = SystemInstruction([TextPart(text=strip_surrogates(ctx.system))])
    if ctx.tools:
        declarations = [FunctionDeclaration(t.name, t.description, t.parameters) for t in ctx.tools]
        body.tools = [Tools(declarations)]
    _answer_shape(body, options, model.provider)
    resource = model.id if "/" in model.id else f"models/{model.id}"
    return BuiltRequest(
        url=join_url(model.base_url, f"/{resource}:streamGenerateContent?alt=sse"),
        headers={"Accept": "text/event-stream"},
        body=_finish(body, options, model.provider),
    )


def _finish(body: Body, options: RequestOptions, route: str) -> bytes:
    """The encoded body with `options.provider_options` appended: a key naming a field the body
    writes, in either spelling, is refused, and so are two keys naming one field."""
    extra = options.provider_options
    if extra:
        one_spelling(extra, route)
    return merge_provider_options(msgspec.json.encode(body), OWNED_FIELDS, extra, route)


def google_structured_output(model: ModelDescriptor) -> StructuredOutputSupport:
    """``native-strict``: ``responseMimeType: application/json`` with ``responseJsonSchema``
    makes Gemini constrain its decoding to the schema (controlled generation), not merely ask
    for JSON. The JSON Schema dialect (``responseJsonSchema``) is sent rather than the older
    OpenAPI-subset ``responseSchema`` (upper-case types, ``propertyOrdering``), so the caller's
    schema goes as written."""
    return "native-strict"


def _key_header(key: str) -> dict[str, str]:
    return {"x-goog-api-key": key}


PROTOCOL: Final = WireProtocol(
    "google-generative-ai",
    build_google_request,
    GoogleTranslator,
    google_structured_output,
    key_headers=_key_header,
    key_header_names=("x-goog-api-key",),
    parallel_tool_calls=False,
    http_error=refine_google_http_error,
)
"""The Gemini API protocol (`registry.protocol("google-generative-ai")`)."""
