"""Images: gates before I/O, oldest-first offload, base64 on the wire (spec §7, §8.4 #118-122)."""

from __future__ import annotations

import base64
import json

import pytest
from providers_fixtures import MockServer, Reply

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.content import OFFLOADED_IMAGE_TEXT
from modelwire.errors import LlmError
from modelwire.vocab import (
    GenerateOptions,
    ImageAttachmentRef,
    ImageBlock,
    Message,
    ModelSource,
    TextBlock,
    ToolResultBlock,
    user_message,
)

ANTHROPIC_TEXT = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"QR code"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]


def _image(name: str) -> ImageBlock:
    return ImageBlock(ImageAttachmentRef(name, "image/png", 3, 1, 1))


class Store:
    def __init__(self) -> None:
        self.reads: list[str] = []

    async def __call__(self, ref: ImageAttachmentRef) -> bytes:
        self.reads.append(ref.attachment_id)
        return ref.attachment_id.encode()[:3].ljust(3, b"x")


def _adapter(url: str, store: Store | None, bound: int | None = None) -> ProvidersAdapter:
    profile: dict[str, object] = {
        "api": "anthropic-messages",
        "base_url": url,
        "api_key_env": "K",
        "models": [{"id": "vision", "input": ["text", "image"]}],
    }
    if bound is not None:
        profile["max_request_image_bytes"] = bound
    return ProvidersAdapter.from_config(
        {"providers": {"gw": profile}}, env={"K": "k"}, read_image=store
    )


def _options(*messages: Message) -> GenerateOptions:
    return GenerateOptions(provider="gw", model="vision", messages=messages)


async def test_mp_118_offload_oldest_first_and_read_only_kept() -> None:
    store = Store()
    history = (
        user_message([ToolResultBlock("c0", (_image("aaa"),))]),
        user_message([TextBlock("look"), _image("bbb"), _image("ccc")]),
    )
    async with MockServer([Reply(reads=ANTHROPIC_TEXT)]) as server:
        chunks = [c async for c in _adapter(server.url, store, bound=8).stream(_options(*history))]
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    assert store.reads == ["bbb", "ccc"]
    body = json.dumps(server.bodies[0])
    assert OFFLOADED_IMAGE_TEXT in body
    images = [
        part
        for m in server.bodies[0]["messages"]
        for part in (m["content"] if isinstance(m["content"], list) else [])
        if part.get("type") == "image"
    ]
    assert [p["source"]["data"] for p in images] == [
        base64.b64encode(b"bbb").decode(),
        base64.b64encode(b"ccc").decode(),
    ]
    assert images[0]["source"]["media_type"] == "image/png"


async def test_mp_119_exactly_at_bound_keeps_both() -> None:
    store = Store()
    async with MockServer([Reply(reads=ANTHROPIC_TEXT)]) as server:
        options = _options(user_message([_image("aaa"), _image("bbb")]))
        [c async for c in _adapter(server.url, store, bound=8).stream(options)]
    assert store.reads == ["aaa", "bbb"]


async def test_mp_35_127_no_attachment_service_refused_before_io() -> None:
    async with MockServer([Reply(reads=ANTHROPIC_TEXT)]) as server:
        with pytest.raises(LlmError) as info:
            [
                c
                async for c in _adapter(server.url, None).stream(
                    _options(user_message([_image("aaa")]))
                )
            ]
    assert info.value.code == "UNSUPPORTED_CONTENT" and "attachment" in info.value.message
    assert server.paths == []


async def test_mp_122_image_in_assistant_refused_without_reading() -> None:
    store = Store()
    assistant = Message("a1", "assistant", (_image("aaa"),), ModelSource("gw", "vision"))
    with pytest.raises(LlmError) as info:
        [
            c
            async for c in _adapter("http://127.0.0.1:9", store).stream(
                _options(user_message("hi"), assistant)
            )
        ]
    assert info.value.code == "UNSUPPORTED_CONTENT"
    assert store.reads == []
