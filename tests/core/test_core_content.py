"""Content helpers R-CNT-1..3 (spec/core.md §11.5 CNT-01..05 and edges)."""

from __future__ import annotations

import pytest

from modelwire import (
    ImageAttachmentRef,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    UserSource,
)
from modelwire.content import OFFLOADED_IMAGE_TEXT, content_has_image, offload_request_images

MIB = 1024 * 1024
OFFLOADED = TextBlock(OFFLOADED_IMAGE_TEXT)


def image(size: int, name: str | None = None) -> ImageBlock:
    return ImageBlock(ImageAttachmentRef("sha256:" + "a" * 64, "image/png", size, 1, 1, name=name))


def msg(*blocks: object, id: str = "m") -> Message:
    return Message(id, "user", tuple(blocks), UserSource())  # type: ignore[arg-type]


def test_cnt_00_offloaded_text_is_verbatim() -> None:
    assert OFFLOADED_IMAGE_TEXT == (
        "[image omitted to keep the request within its image limit; older images are omitted "
        "first. If this image is still needed, read its file again when a path is available; "
        "otherwise ask the user to attach it again.]"
    )


def test_cnt_01_images_within_the_bound_return_the_same_list() -> None:
    messages = [msg(image(3), image(3))]
    assert offload_request_images(messages, 8) is messages
    assert offload_request_images(messages, None) is messages


def test_cnt_02_oldest_image_goes_first() -> None:
    messages = [msg(*(image(3 * MIB) for _ in range(5)))]
    assert offload_request_images(messages, 20 * MIB) is messages
    first = image(3 * MIB + 1)
    rest = [image(3 * MIB, name=f"n{i}") for i in range(4)]
    bigger = [msg(first, *rest)]
    out = offload_request_images(bigger, 20 * MIB)
    assert out is not bigger
    assert out[0].content == (OFFLOADED, *rest)
    assert all(a is b for a, b in zip(out[0].content[1:], rest, strict=True))


def test_cnt_03_nested_images_are_walked_depth_first_copy_on_write() -> None:
    s = image(3)
    other = image(3, name="other")
    nested = ToolResultBlock("call-1", (s,), False)
    m0 = msg(nested, id="m0")
    m1 = msg(s, other, id="m1")
    messages = [m0, m1]
    out = offload_request_images(messages, 8)
    assert out is not messages
    assert isinstance(out, list)
    changed = out[0]
    assert changed is not m0
    assert (changed.id, changed.role, changed.source) == (m0.id, m0.role, m0.source)
    assert changed.content == (ToolResultBlock("call-1", (OFFLOADED,), False),)
    assert out[1] is m1
    assert m0.content == (nested,)  # the durable input is untouched
    assert nested.content == (s,)


def test_cnt_04_a_single_oversized_image_is_replaced() -> None:
    out = offload_request_images([msg(image(300))], 8)
    assert out[0].content == (OFFLOADED,)


def test_cnt_05_unchanged_tool_result_keeps_identity() -> None:
    result = ToolResultBlock("call-1", (TextBlock("only text"),))
    out = offload_request_images([msg(result, image(3))], 1)
    assert out[0].content[0] is result
    assert out[0].content[1] == OFFLOADED


def test_cnt_03_tuples_stay_tuples_and_exact_bound_is_inclusive() -> None:
    messages = (msg(image(3)), msg(image(3)))
    assert offload_request_images(messages, 8) is messages
    out = offload_request_images(messages, 7)
    assert isinstance(out, tuple)
    assert out[0].content == (OFFLOADED,)
    assert out[1] is messages[1]


def test_cnt_03_deep_nesting_is_iterative() -> None:
    inner: ToolResultBlock = ToolResultBlock("c", (image(30),))
    for _ in range(3000):
        inner = ToolResultBlock("c", (inner,))
    messages = [msg(inner)]
    assert content_has_image(messages[0].content)
    out = offload_request_images(messages, 8)
    block = out[0].content[0]
    depth = 0
    while isinstance(block, ToolResultBlock):
        block = block.content[0]
        depth += 1
    assert depth == 3001
    assert block == OFFLOADED


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param((TextBlock("x"),), False, id="text-only"),
        pytest.param((image(1),), True, id="top-level"),
        pytest.param(
            (ToolResultBlock("c", (ToolResultBlock("d", (image(1),)),)),), True, id="nested"
        ),
        pytest.param((ToolResultBlock("c", (TextBlock("t"),)),), False, id="nested-text"),
    ],
)
def test_cnt_02_content_has_image(content: tuple[object, ...], expected: bool) -> None:
    assert content_has_image(content) is expected  # type: ignore[arg-type]
