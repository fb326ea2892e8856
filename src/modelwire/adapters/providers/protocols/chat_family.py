"""The Chat Completions family's streaming skeleton, shared by its dialects' translators.

Every dialect (`openai-completions` and the hosts it covers, `mistral-conversations`; Azure's
chat route is `openai-completions` with its content-filter hook) streams the same frame: SSE
events whose data is a JSON chunk ``{id, model, choices: [{index, delta, finish_reason}],
usage}``, ended by ``[DONE]``. `ChatStream` owns that frame once — the end marker, the decode,
the response id and model (first reported wins), choice 0 wherever it sits in ``choices``, the
inferred finish after a ``[DONE]`` without a finish reason, and the end of the stream — and a
dialect fills in what differs: its chunk struct (its `decode`), one chunk (`_chunk`: usage, an
in-band error, then choice 0's delta and finish reason) and how the open blocks close
(`_close_blocks`). One hook call per event: the frame costs the hot path no more than that.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import ClassVar, Generic, Protocol, TypeVar

import msgspec

from ....vocab import StreamChunk
from ....wire.sse import SseEvent
from .common import ResponseRecord, end_stream, malformed_event

__all__ = ["ChatStream", "ChoiceLike", "ChunkLike", "StreamError", "choice_zero"]


class StreamError(msgspec.Struct, gc=False):
    """An in-band ``error`` object of a chunk (every dialect's shape)."""

    message: str | None = None
    type: str | None = None
    code: int | str | None = None


class ChoiceLike(Protocol):
    """What the skeleton reads of one choice: its index (None counts as 0)."""

    @property
    def index(self) -> int | None: ...


class ChunkLike(Protocol):
    """What the skeleton reads of one decoded chunk: the response id and model, the choices."""

    @property
    def id(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def choices(self) -> Sequence[ChoiceLike] | None: ...


ChunkT = TypeVar("ChunkT", bound=ChunkLike)
ChoiceT = TypeVar("ChoiceT", bound=ChoiceLike)


def choice_zero(choices: Sequence[ChoiceT] | None) -> ChoiceT | None:
    """Choice 0 of a chunk wherever it sits in ``choices`` (None counts as index 0), or None.
    A dialect checks ``choices[0]`` itself first (the common case costs no call)."""
    return next((c for c in choices or () if not c.index), None)


class ChatStream(abc.ABC, Generic[ChunkT]):
    """Folds one Chat Completions stream into chunks; `end()` closes the blocks and finishes.

    A dialect subclass passes its `decode` (data → its chunk struct), sets `_label` (the
    protocol's name in a malformed-event failure) and `_end_text` (the failure of a stream that
    ends without a finish reason), and implements the hooks."""

    __slots__ = ("_decode", "_record", "done")

    _label: ClassVar[str]
    _end_text: ClassVar[str]

    def __init__(self, record: ResponseRecord, decode: Callable[[str], ChunkT]) -> None:
        self._record = record
        self._decode = decode
        self.done = False  # `[DONE]` (or an error that ends the response) arrived: stop reading

    def feed(self, event: SseEvent, out: list[StreamChunk]) -> None:
        """Translate one SSE event, appending its chunks to `out`."""
        data = event.data
        if data == "[DONE]":
            self.done = True
            return
        if not data or self.done:
            return
        try:
            chunk = self._decode(data)
        except msgspec.DecodeError as exc:
            raise malformed_event(self._record, self._label, exc) from exc
        record = self._record
        if chunk.id and record.response_id is None:
            record.response_id = chunk.id
        if chunk.model and record.response_model is None and chunk.model != record.model:
            record.response_model = chunk.model
        self._chunk(chunk, data, out)

    @abc.abstractmethod
    def _chunk(self, chunk: ChunkT, data: str, out: list[StreamChunk]) -> None:
        """Translate one chunk: its own fields (usage, an in-band error), then its choice 0
        (`choice_zero`); `data` is the event's raw text (for what is kept whole). Each dialect
        (`CompletionsTranslator`, `MistralTranslator`) defines it."""

    def _close_blocks(self, out: list[StreamChunk]) -> None:
        """Close the blocks still open, in content order (a finish that is no error)."""
        for block in self._record.blocks:
            block.close(out)

    def end(self, out: list[StreamChunk]) -> None:
        """The stream ended: close the blocks, then usage and finish (a finish inferred after
        ``[DONE]`` when no finish reason came)."""
        record = self._record
        if self.done and record.stop_reason is None:
            record.infer_finish()
        if record.stop_reason is not None and record.stop_reason != "error":
            self._close_blocks(out)
        end_stream(record, record.stop_reason is not None, self._end_text, out)
