"""`bedrock-converse-stream`: Amazon Bedrock ConverseStream, ``POST {base_url}/model/{id}/
converse-stream`` with a JSON body, answered in the binary AWS event-stream framing.

The request follows pi-ai's Bedrock provider: user text, images (``source.bytes`` base64),
tool calls and results (consecutive results in one user message, which also absorbs a user
message right after them: Converse wants the roles to alternate), Claude thinking (budget or
adaptive, through ``additionalModelRequestFields``), cache points after the system prompt and
the last user message for the Claude models that take them, ``inferenceConfig`` (``maxTokens``
always, clamped to the context window; ``temperature`` unless Claude thinks), ``toolConfig``
(``tool_choice`` ``none`` sends no tools, ``required`` is ``any``). Reasoning signatures and
redacted reasoning go back only to the same provider, api and model (`prepare_messages` turns
foreign reasoning into text) and only to Claude models, which alone accept the field.

Structured output is native where Bedrock serves it (`structured_outputs`:
``outputConfig.textFormat`` with the schema as a JSON string, the answer streams as text);
elsewhere it is a forced answer tool, as on ``anthropic-messages``: the adapter must then set
`ResponseRecord.answer_tool` so the translator streams that tool's input as the answer's text.
Converse has no switch for parallel tool calls: the protocol does not offer `parallel_tool_calls`
(the runtime refuses it, `UNSUPPORTED_OPTION`).

Authentication is ambient AWS (`aws_credentials.authorize`): a Bedrock API key as a bearer
token, else a SigV4 signature over the final request.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import quote

import msgspec
from msgspec import UNSET

from ....errors import ErrorCode, LlmError
from ....vocab import StructuredOutputSupport
from ....wire.eventstream import EventStreamDecoder
from ...shape import merge_provider_options
from ..aws_credentials import AMBIENT_ENV, authorize, aws_ambient_ready
from ..context import (
    NAssistant,
    NContext,
    NDocument,
    NImage,
    NPart,
    NText,
    NToolCall,
    NToolResult,
    NUser,
    strip_surrogates,
)
from ..materialize import ModelDescriptor
from .bedrock_body import (
    AdditionalFields,
    AssistantBlock,
    Body,
    CachePoint,
    CachePointBlock,
    Document,
    DocumentData,
    Empty,
    Image,
    ImageData,
    ImageSource,
    InferenceConfig,
    InputSchema,
    JsonSchemaFormat,
    Message,
    NamedTool,
    OutputConfig,
    OutputEffort,
    ReasoningBody,
    ReasoningContent,
    ReasoningText,
    Structure,
    Text,
    TextFormat,
    ToolChoice,
    ToolConfig,
    ToolEntry,
    ToolResult,
    ToolResultBody,
    ToolSpec,
    ToolUse,
    ToolUseBody,
    UserBlock,
    adaptive_thinking,
    is_claude,
    native_xhigh,
    prompt_caching,
    structured_outputs,
)
from .bedrock_errors import refine_bedrock_http_error
from .bedrock_stream import BedrockTranslator
from .request import BuiltRequest, RequestOptions, Thinking, join_url, safe_tool_id
from .spec import WireProtocol
from .transform import output_cap, prepare_messages

__all__ = ["API", "PROTOCOL", "bedrock_structured_output", "build_bedrock_request"]

API: Final = "bedrock-converse-stream"
EMPTY_TEXT: Final = "<empty>"
"""What a block Converse requires but the history left empty carries (pi-ai's placeholder)."""

_FORMATS: Final = {
    "image/jpeg": "jpeg",
    "image/jpg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}
_BUDGETS: Final = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_EFFORTS: Final = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}
_INTERLEAVED: Final = "interleaved-thinking-2025-05-14"


def _tool_id(raw: str) -> str:
    """A tool-use id in Bedrock's charset (``[A-Za-z0-9_-]{1,64}``), for calls and results
    alike (ids Bedrock minted pass unchanged)."""
    return safe_tool_id(raw, 64)


def _text(text: str) -> Text | None:
    clean = strip_surrogates(text)
    return Text(clean) if clean.strip() else None


def _image(part: NImage, route: str) -> Image:
    fmt = _FORMATS.get(part.mime.lower())
    if fmt is None:
        raise LlmError(
            f'route "{route}": bedrock-converse-stream takes jpeg, png, gif or webp images, '
            f"not {part.mime}",
            ErrorCode.UNSUPPORTED_CONTENT,
        )
    return Image(ImageData(fmt, ImageSource(part.data)))


_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9 ()\[\]-]+")


def _document(part: NDocument, index: int) -> Document:
    """A ``document`` block: Bedrock names take letters, digits, single spaces, hyphens,
    parentheses and brackets (anything else becomes a hyphen)."""
    stem = (part.name or "").rsplit(".", 1)[0] if part.name else ""
    name = " ".join(_NAME_CHARS.sub("-", stem).split())[:200] or f"document-{index}"
    fmt = "txt" if part.mime == "text/plain" else "pdf"
    return Document(DocumentData(fmt, name, ImageSource(part.data or "")))


def _parts(content: tuple[NPart, ...], route: str) -> list[UserBlock]:
    """User parts (a document by URL and audio never get here: `documents.check_media`)."""
    out: list[UserBlock] = []
    for part in content:
        if isinstance(part, NText):
            block = _text(part.text)
            if block is not None:
                out.append(block)
        elif isinstance(part, NImage):
            out.append(_image(part, route))
        elif isinstance(part, NDocument):
            out.append(_document(part, len(out) + 1))
    return out or [Text(EMPTY_TEXT)]


def _redacted(blob: str) -> str | None:
    try:
        base64.b64decode(blob, validate=True)
    except (binascii.Error, ValueError):
        return None
    return blob


def _assistant(message: NAssistant, claude: bool) -> list[AssistantBlock]:
    blocks: list[AssistantBlock] = []
    for part in message.content:
        if isinstance(part, NText):
            text = _text(part.text)
            if text is not None:
                blocks.append(text)
        elif isinstance(part, NToolCall):
            blocks.append(ToolUse(ToolUseBody(_tool_id(part.id), part.name, part.arguments)))
        elif part.redacted:
            blob = _redacted(part.signature or "") if claude else None
            if blob:
                blocks.append(ReasoningContent(ReasoningBody(redacted_content=blob)))
        else:
            thinking = strip_surrogates(part.text)
            if not thinking.strip():
                continue
            if not claude:  # only Claude accepts reasoningText.signature
                blocks.append(ReasoningContent(ReasoningBody(ReasoningText(thinking))))
            elif part.signature and part.signature.strip():
                body = ReasoningBody(ReasoningText(thinking, part.signature))
                blocks.append(ReasoningContent(body))
            else:  # an unsigned replay is refused: keep the text as text
                blocks.append(Text(thinking))
    return blocks


def _result(message: NToolResult, route: str) -> ToolResult:
    content = _parts(message.content, route)
    results: list[Text | Image] = [b for b in content if isinstance(b, (Text, Image))]
    status = "error" if message.is_error else "success"
    return ToolResult(ToolResultBody(_tool_id(message.tool_call_id), results, status))


def _messages(ctx: NContext, model: ModelDescriptor) -> list[Message]:
    claude = is_claude(model)
    route = model.provider
    out: list[Message] = []

    def user(blocks: list[UserBlock]) -> None:
        if out and out[-1].role == "user":
            out[-1].content.extend(blocks)  # Converse wants alternating roles
        else:
            out.append(Message("user", [*blocks]))

    for message in prepare_messages(ctx, model, _tool_id):
        if isinstance(message, NToolResult):
            user([_result(message, route)])
        elif isinstance(message, NUser):
            if isinstance(message.content, str):
                user([_text(message.content) or Text(EMPTY_TEXT)])
            else:
                user(_parts(message.content, route))
        else:
            blocks = _assistant(message, claude)
            if blocks:
                out.append(Message("assistant", [*blocks]))
    return out


def _thinking(
    model: ModelDescriptor, options: RequestOptions, cap: int, govcloud: bool
) -> tuple[AdditionalFields | None, int]:
    """Claude thinking fields and the output cap they leave (other models: none, `cap`)."""
    effort = options.effort
    if not model.reasoning or effort is None or effort == "off" or not is_claude(model):
        return None, cap
    display = UNSET if govcloud else "summarized"  # GovCloud refuses `display`
    if adaptive_thinking(model):
        mapped = (model.thinking_level_map or {}).get(effort)
        if effort == "xhigh" and native_xhigh(model):
            level = "xhigh"
        elif isinstance(mapped, str):
            level = mapped
        else:
            level = _EFFORTS.get(effort, "high")
        thinking = Thinking(type="adaptive", display=display)
        return AdditionalFields(thinking=thinking, output_config=OutputEffort(level)), cap
    level = effort if effort in _BUDGETS else "high"
    budget = (options.thinking_budgets or {}).get(level, _BUDGETS[level])
    max_tokens = min(cap + budget, model.max_tokens)
    budget = min(budget, max(0, max_tokens - 1024)) or 1024
    thinking = Thinking(type="enabled", budget_tokens=budget, display=display)
    return AdditionalFields(thinking=thinking, anthropic_beta=[_INTERLEAVED]), max_tokens


def _tool_config(ctx: NContext, options: RequestOptions) -> ToolConfig | None:
    choice = options.tool_choice
    if not ctx.tools or choice == "none":
        return None
    tools = [
        ToolEntry(ToolSpec(t.name, t.description or UNSET, InputSchema(t.parameters)))
        for t in ctx.tools
    ]
    if choice is None:
        return ToolConfig(tools)
    if choice == "auto":
        return ToolConfig(tools, ToolChoice(auto=Empty()))
    if choice == "required":
        return ToolConfig(tools, ToolChoice(any=Empty()))
    return ToolConfig(tools, ToolChoice(tool=NamedTool(choice.name)))


def _answer_shape(
    body: Body, options: RequestOptions, model: ModelDescriptor, thinking: bool
) -> None:
    """Structured output: native `outputConfig.textFormat`, else a forced answer tool."""
    out = options.output
    if out is None:
        return
    route = model.provider
    schema = out.schema
    if not (isinstance(schema, Mapping) and schema.get("type") == "object"):
        raise LlmError(
            f'route "{route}": output.schema must describe a JSON object ({{"type": "object", '
            f"...}}) on {API}",
            ErrorCode.UNSUPPORTED_OPTION,
        )
    about = UNSET if out.description is None else out.description
    if structured_outputs(model):
        text = msgspec.json.encode(schema).decode()
        fmt = JsonSchemaFormat(name=out.name, schema=text, description=about)
        body.output_config = OutputConfig(TextFormat(Structure(fmt)))
        return
    if options.tool_choice is not None or thinking:
        why = "tool_choice" if options.tool_choice is not None else "reasoning (Claude thinking)"
        raise LlmError(
            f'route "{route}": output (structured output) cannot be combined with {why} on '
            f'{API} model "{model.id}" (it forces the answer tool)',
            ErrorCode.UNSUPPORTED_OPTION,
        )
    described = out.description or f"Give the answer as the input of this tool ({out.name})."
    answer = ToolEntry(ToolSpec(out.name, described, InputSchema(schema)))
    config = body.tool_config
    tools = [] if isinstance(config, msgspec.UnsetType) else config.tools
    body.tool_config = ToolConfig([*tools, answer], ToolChoice(tool=NamedTool(out.name)))


def _govcloud(model: ModelDescriptor) -> bool:
    lowered = model.id.lower()
    return lowered.startswith(("us-gov.", "arn:aws-us-gov:")) or "us-gov-" in model.base_url.lower()


def build_bedrock_request(
    model: ModelDescriptor, ctx: NContext, options: RequestOptions
) -> BuiltRequest:
    """The ConverseStream request for `model` (unsigned: `aws_credentials.authorize` signs the
    final request, or sends the Bedrock API key)."""
    messages = _messages(ctx, model)
    retention = options.cache_retention or "short"
    cache: CachePointBlock | None = None
    if retention != "none" and prompt_caching(model):
        cache = CachePointBlock(CachePoint(ttl="1h" if retention == "long" else UNSET))
    cap = output_cap(ctx, model, options.max_tokens)
    extra, max_tokens = _thinking(model, options, cap, _govcloud(model))
    thinking = extra is not None
    temperature = UNSET if options.temperature is None or thinking else options.temperature
    body = Body(
        messages=messages,
        inference_config=InferenceConfig(max_tokens=max_tokens, temperature=temperature),
    )
    if ctx.system is not None:
        system: list[Text | CachePointBlock] = [Text(strip_surrogates(ctx.system))]
        if cache is not None:
            system.append(cache)
        body.system = system
    config = _tool_config(ctx, options)
    if config is not None:
        body.tool_config = config
    if extra is not None:
        body.additional_model_request_fields = extra
    _answer_shape(body, options, model, thinking)
    if cache is not None and messages and messages[-1].role == "user":
        messages[-1].content.append(cache)
    encoded = msgspec.json.encode(body)
    return BuiltRequest(
        url=join_url(model.base_url, f"/model/{quote(model.id, safe='')}/converse-stream"),
        headers={"Accept": "application/vnd.amazon.eventstream"},
        body=merge_provider_options(
            encoded, Body.__struct_encode_fields__, options.provider_options, model.provider
        ),
    )


def bedrock_structured_output(model: ModelDescriptor) -> StructuredOutputSupport:
    """Native constrained JSON where Bedrock serves structured outputs, else the answer tool."""
    return "native-strict" if structured_outputs(model) else "emulated"


PROTOCOL: Final = WireProtocol(
    API,
    build_bedrock_request,
    BedrockTranslator,
    bedrock_structured_output,
    framer=EventStreamDecoder,
    authorize=authorize,
    ambient_env=AMBIENT_ENV,
    http_error=refine_bedrock_http_error,
    signed_path=True,
    ambient_ready=aws_ambient_ready,
    reasoning=is_claude,
    parallel_tool_calls=False,
)
"""The ``bedrock-converse-stream`` protocol (registered lazily by `registry.protocol`)."""
