"""The fixed heuristic token estimator (spec E.1), shared by the context projections.

Lengths are UTF-16 code units (what the upstream JavaScript measured), so a character outside
the Basic Multilingual Plane counts 2. Prices: text/reasoning `⌈len/4⌉ + 4`; tool call
`⌈len(name)/4⌉ + ⌈len(arguments)/4⌉ + 4`; tool result `estimate(content) + 4`; any other block
(an image) `4 + ⌈len(compact JSON)/4⌉`; a message `Σ blocks + 4`; a system prompt `⌈len/4⌉ + 4`;
tools `⌈len(compact JSON)/4⌉ + 4` when non-empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ..never import assert_never
from ..session.events import EpochHeader
from ..vocab import (
    AudioBlock,
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
)

__all__ = [
    "estimate_blocks",
    "estimate_header",
    "estimate_message",
    "estimate_system",
    "estimate_tools",
    "utf16_length",
]

_ENCODER = msgspec.json.Encoder()


def utf16_length(text: str) -> int:
    """The length of `text` in UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _quarter(length: int) -> int:
    return -(-length // 4)


def _block(block: ContentBlock) -> int:  # noqa: RET503 - the match is exhaustive
    match block:
        case TextBlock() | ReasoningBlock():
            return _quarter(utf16_length(block.text)) + 4
        case ToolCallBlock():
            return _quarter(utf16_length(block.name)) + _quarter(utf16_length(block.arguments)) + 4
        case ToolResultBlock():
            return estimate_blocks(block.content) + 4
        case ImageBlock():
            return 4 + _quarter(utf16_length(_ENCODER.encode(block).decode()))
        case DocumentBlock(data=data, url=url):
            # a PDF page of ~3 KB text is ~1,500-3,000 tokens at the providers: bytes / 8
            return 4 + (len(data) // 8 if data is not None else _quarter(len(url or "")))
        case AudioBlock(data=data):
            return 4 + len(data) // 1000  # ~32 tokens a second of 16 kHz 16-bit audio
        case _:
            assert_never(block, "token estimator")


def estimate_blocks(blocks: Iterable[ContentBlock]) -> int:
    """The summed price of content blocks (no role overhead)."""
    return sum(_block(block) for block in blocks)


def estimate_message(message: Message | None) -> int:
    """A message's price: its blocks plus 4 for the role; an absent (empty) message prices 0."""
    if message is None or not message.content:
        return 0
    return estimate_blocks(message.content) + 4


def estimate_system(system: str | None) -> int:
    """A system prompt's price, 0 when absent or empty."""
    return _quarter(utf16_length(system)) + 4 if system else 0


def estimate_tools(tools: Sequence[ToolSchema] | None) -> int:
    """The price of the tool list's compact JSON, 0 when there are no tools."""
    if not tools:
        return 0
    return _quarter(utf16_length(_ENCODER.encode(tuple(tools)).decode())) + 4


def estimate_header(header: EpochHeader | None) -> int:
    """System prompt plus tools of a canonical request header (0 for none)."""
    if header is None:
        return 0
    return estimate_system(header.system) + estimate_tools(header.tools)
