"""The session-log events of a provider batch job (`modelwire.batch`): pure data beside
`modelwire.events` (layer 2), which registers them with the other event types.

A job is one session (its id is the job id). `batch/planned` holds the whole request list before
anything is sent; `batch/uploaded` (OpenAI: the input file), `batch/create-started` and
`batch/created` mark each provider step once it is known; `batch/ended` the provider's final
state. Every step is appended with a durable flush before the next one starts, so a process that
died anywhere is continued by `BatchJob.open` from exactly what the log says.
"""

from __future__ import annotations

import msgspec

from .vocab import GenerateOptions

__all__ = ["BatchCreateStarted", "BatchCreated", "BatchEnded", "BatchPlanned", "BatchUploaded"]


class BatchPlanned(msgspec.Struct, frozen=True, kw_only=True):
    """A job: its route and model, the provider's batch API (``openai``, ``anthropic`` or
    ``gemini``), when
    it was planned (epoch ms) and the requests in order."""

    job_id: str
    provider: str
    model: str
    api: str
    planned_ms: int
    requests: tuple[GenerateOptions, ...]


class BatchUploaded(msgspec.Struct, frozen=True, kw_only=True):
    """The input file holding the requests (OpenAI ``/v1/files``)."""

    file_id: str


class BatchCreateStarted(msgspec.Struct, frozen=True, kw_only=True):
    """The create request is about to be sent (a crash after it is resolved by looking up)."""

    started_ms: int


class BatchCreated(msgspec.Struct, frozen=True, kw_only=True):
    """The provider's batch id."""

    batch_id: str


class BatchEnded(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The provider's final status and where its results are."""

    status: str
    output_file_id: str | None = None
    error_file_id: str | None = None
    results_url: str | None = None
