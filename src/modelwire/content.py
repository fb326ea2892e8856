"""Content helpers: the one image walk and request-image offloading (spec/core.md §7.6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, overload

import msgspec

from .vocab.blocks import ContentBlock, ImageBlock, TextBlock, ToolResultBlock
from .vocab.messages import Message, message_has_image

__all__ = [
    "OFFLOADED_IMAGE_TEXT",
    "content_has_image",
    "image_request_cost",
    "offload_request_images",
]

OFFLOADED_IMAGE_TEXT: Final = (
    "[image omitted to keep the request within its image limit; older images are omitted first. "
    "If this image is still needed, read its file again when a path is available; otherwise ask "
    "the user to attach it again.]"
)
"""Model-visible stand-in text for an image dropped from a request (wire-visible; verbatim)."""

_OFFLOADED_BLOCK: Final = TextBlock(OFFLOADED_IMAGE_TEXT)


def content_has_image(content: Sequence[ContentBlock]) -> bool:
    """True when any block, or any block nested (at any depth) in a tool result, is an image."""
    return message_has_image(content)


def image_request_cost(image: ImageBlock) -> int:
    """The bytes an image adds to a request: its base64 length with padding, `ceil(n / 3) * 4`."""
    return (image.attachment.bytes + 2) // 3 * 4


def _image_costs(messages: Sequence[Message]) -> list[int]:
    """Image costs in traversal order: messages, then blocks, depth-first into tool results."""
    costs: list[int] = []
    for message in messages:
        # A stack of iterators keeps the walk iterative (no recursion limit on nesting depth).
        stack = [iter(message.content)]
        while stack:
            block = next(stack[-1], None)
            if block is None:
                stack.pop()
            elif isinstance(block, ImageBlock):
                costs.append(image_request_cost(block))
            elif isinstance(block, ToolResultBlock):
                stack.append(iter(block.content))
    return costs


class _Frame:
    """One level of the copy-on-write rewrite: the source blocks and the copy, once needed."""

    __slots__ = ("blocks", "out", "owner", "position")

    def __init__(self, blocks: tuple[ContentBlock, ...], owner: ToolResultBlock | None) -> None:
        self.blocks = blocks
        self.owner = owner
        self.position = 0
        self.out: list[ContentBlock] | None = None

    def emit(self, original: ContentBlock, replacement: ContentBlock | None) -> None:
        """Record the block at `position` (replaced or kept) and advance."""
        if replacement is not None and self.out is None:
            self.out = list(self.blocks[: self.position])
        if self.out is not None:
            self.out.append(original if replacement is None else replacement)
        self.position += 1


def _rewrite(
    content: tuple[ContentBlock, ...], budget: list[int]
) -> tuple[ContentBlock, ...] | None:
    """Replace the first `budget[0]` images of `content`; None when nothing changed."""
    stack = [_Frame(content, None)]
    while True:
        frame = stack[-1]
        if frame.position == len(frame.blocks):
            stack.pop()
            changed = None if frame.out is None else tuple(frame.out)
            if not stack:
                return changed
            owner = frame.owner
            assert owner is not None
            parent = stack[-1]
            parent.emit(
                owner, None if changed is None else msgspec.structs.replace(owner, content=changed)
            )
            continue
        block = frame.blocks[frame.position]
        if budget[0] > 0 and isinstance(block, ImageBlock):
            budget[0] -= 1
            frame.emit(block, _OFFLOADED_BLOCK)
        elif budget[0] > 0 and isinstance(block, ToolResultBlock):
            stack.append(_Frame(block.content, block))
        else:
            frame.emit(block, None)


@overload
def offload_request_images(
    messages: tuple[Message, ...], max_request_image_bytes: int | None
) -> tuple[Message, ...]: ...
@overload
def offload_request_images(
    messages: list[Message], max_request_image_bytes: int | None
) -> list[Message]: ...
@overload
def offload_request_images(
    messages: Sequence[Message], max_request_image_bytes: int | None
) -> Sequence[Message]: ...
def offload_request_images(
    messages: Sequence[Message], max_request_image_bytes: int | None
) -> Sequence[Message]:
    """Replace the oldest images by `OFFLOADED_IMAGE_TEXT` until the request's images fit the bound.

    With no bound, or when the images already fit (total ≤ bound), the input object itself is
    returned. Otherwise a new sequence of the same kind (tuple or list) is returned: unchanged
    messages and blocks keep their identity, changed messages are new values with the same id, role
    and source. Image bytes are never read: the cost comes from attachment metadata alone.
    """
    if max_request_image_bytes is None:
        return messages
    costs = _image_costs(messages)
    total = sum(costs)
    count = 0
    for cost in costs:
        if total <= max_request_image_bytes:
            break
        total -= cost
        count += 1
    if count == 0:
        return messages
    budget = [count]
    out: list[Message] = []
    for message in messages:
        changed = _rewrite(message.content, budget) if budget[0] > 0 else None
        out.append(
            message if changed is None else msgspec.structs.replace(message, content=changed)
        )
    return tuple(out) if isinstance(messages, tuple) else out
