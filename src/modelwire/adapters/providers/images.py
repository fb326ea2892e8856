"""Request images (spec §7): capability gates, oldest-first offload, then reading the bytes.

Images are durable attachment references; their bytes are read at request time through the
adapter's `read_image` callback, after `offload_request_images` has replaced the oldest ones by
`OFFLOADED_IMAGE_TEXT` until the sum of base64 lengths fits `max_request_image_bytes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ...content import offload_request_images
from ...errors import ErrorCode, LlmError
from ...vocab import ImageAttachmentRef, ImageBlock, Message, ToolResultBlock, message_has_image
from .materialize import ModelDescriptor

__all__ = ["ImageLoader", "prepare_images"]

ImageLoader = Callable[[ImageAttachmentRef], Awaitable[bytes]]
"""Reads the bytes of one durable image attachment."""


def _images(messages: Sequence[Message]) -> list[ImageBlock]:
    out: list[ImageBlock] = []
    for message in messages:
        stack = list(reversed(message.content))
        while stack:
            block = stack.pop()
            if isinstance(block, ImageBlock):
                out.append(block)
            elif isinstance(block, ToolResultBlock):
                stack.extend(reversed(block.content))
    return out


async def prepare_images(
    messages: Sequence[Message],
    *,
    model: ModelDescriptor,
    max_request_image_bytes: int,
    load: ImageLoader | None,
) -> tuple[Sequence[Message], Callable[[ImageBlock], bytes] | None]:
    """Gate and offload the request's images and read the kept ones.

    Returns the (possibly rewritten) history and a reader of the kept images' bytes, or no reader
    when the history has no image. `UNSUPPORTED_CONTENT` when the model takes no images, no
    attachment loader is configured, or an image sits in a system or assistant message.
    """
    if not any(message_has_image(m.content) for m in messages):
        return messages, None
    where = f'provider "{model.provider}" model "{model.id}"'
    if "image" not in model.input:
        raise LlmError(f"{where} does not accept images", ErrorCode.UNSUPPORTED_CONTENT)
    if load is None:
        raise LlmError(
            f"{where}: images need the durable attachment service (configure read_image)",
            ErrorCode.UNSUPPORTED_CONTENT,
        )
    for message in messages:
        if message.role != "user" and message_has_image(message.content):
            raise LlmError(
                f"{where}: images are only sent from user content and tool results, not from a "
                f"{message.role} message",
                ErrorCode.UNSUPPORTED_CONTENT,
            )
    kept = offload_request_images(messages, max_request_image_bytes)
    data: dict[str, bytes] = {}
    for block in _images(kept):
        ref = block.attachment
        if ref.attachment_id not in data:
            data[ref.attachment_id] = await load(ref)
    return kept, lambda block: data[block.attachment.attachment_id]
