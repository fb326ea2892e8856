"""Content blocks and failures as the inspector's text-only payloads (`BlockView`, `FailureView`).

Nothing here renders HTML: the page turns `text` into DOM text nodes (markdown for `text` blocks,
built element by element), so model output can never become markup or script.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..never import assert_never
from ..vocab import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    LlmFailure,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolResultBlock,
    media_label,
)
from .payloads import BlockView, FailureView, UsageView

__all__ = ["block_views", "failure_text", "failure_view", "nested_text", "usage_view"]


def failure_view(failure: LlmFailure) -> FailureView:
    """The shown facts of a failure (code, status, message, Retry-After, request id)."""
    return FailureView(
        code=str(failure.code),
        message=failure.message,
        status=failure.status,
        retry_after_ms=failure.provider_retry_after_ms,
        request_id=failure.request_id,
    )


def failure_text(failure: LlmFailure) -> str:
    """`CODE (HTTP status): message`."""
    status = f" (HTTP {failure.status})" if failure.status is not None else ""
    return f"{failure.code}{status}: {failure.message}"


def usage_view(usage: TokenUsage) -> UsageView:
    """`usage` with every bucket as an int and its total."""
    return UsageView(
        input=usage.input_tokens,
        cache_read=usage.cache_read_tokens or 0,
        cache_write=usage.cache_write_tokens or 0,
        output=usage.output_tokens,
        reasoning=usage.reasoning_tokens or 0,
        total=usage.total_tokens,
    )


def nested_text(blocks: Iterable[ContentBlock]) -> str:
    """The text of (possibly nested) blocks, one block per line; images as a short label."""
    parts: list[str] = []
    stack = list(blocks)[::-1]
    while stack:
        block = stack.pop()
        if isinstance(block, ToolResultBlock):
            stack.extend(reversed(block.content))
        elif isinstance(block, ToolCallBlock):
            parts.append(f"{block.name}({block.arguments})")
        elif isinstance(block, ImageBlock):
            parts.append(_image_label(block))
        elif isinstance(block, (DocumentBlock, AudioBlock)):
            parts.append(media_label(block))
        else:
            parts.append(block.text)
    return "\n".join(parts)


def _image_label(block: ImageBlock) -> str:
    ref = block.attachment
    name = f" {ref.name}" if ref.name else ""
    return f"[image{name}: {ref.media_type}, {ref.width}×{ref.height}, {ref.bytes} bytes]"


def block_views(blocks: Iterable[ContentBlock]) -> tuple[BlockView, ...]:
    """One `BlockView` per block (tool results flattened to their text)."""
    out: list[BlockView] = []
    for block in blocks:
        match block:
            case TextBlock(text=text):
                out.append(BlockView(type="text", text=text))
            case ReasoningBlock(text=text):
                out.append(BlockView(type="reasoning", text=text))
            case ToolCallBlock(id=call_id, name=name, arguments=arguments):
                out.append(BlockView(type="tool-call", text=arguments, call_id=call_id, name=name))
            case ToolResultBlock(tool_call_id=call_id, content=content, is_error=is_error):
                out.append(
                    BlockView(
                        type="tool-result",
                        text=nested_text(content),
                        call_id=call_id,
                        is_error=bool(is_error),
                    )
                )
            case ImageBlock():
                out.append(BlockView(type="image", text=_image_label(block)))
            case DocumentBlock() | AudioBlock():
                out.append(BlockView(type=block.type, text=media_label(block)))
            case _:
                assert_never(block)
    return tuple(out)
