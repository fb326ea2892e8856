"""`BatchJob`: a provider batch (OpenAI Batch API, Anthropic Message Batches, Gemini API batch
mode) made durable by the session log, so a process that dies anywhere never submits twice.

A job is one session of the log (its id, ``batch-…``, is the job id). `submit` appends
`batch/planned` (every request, in order) with a durable flush, then walks the provider steps —
upload the input file (OpenAI), create the batch — appending each step's outcome durably before
the next. `open(log, job_id)` reads the events back and finishes whatever step the log does not
show as done, first asking the provider whether it already happened (the input file is named
``<job_id>.jsonl``; an OpenAI batch carries ``metadata.modelwire_job``, a Gemini batch the job
id as ``displayName``; an Anthropic batch is matched by request count and creation time): so a crash between "uploaded" and "created", or
during the create itself, ends with exactly one batch.

`status()` asks the provider; `wait(poll_s=None)` polls until the batch ended (`poll_s`, else a
backoff from 2 s doubling to 60 s), cancellable by task cancellation; `results()` gives one
`BatchItem` per request in order — its `GenerateResult` (a failed request's finish is its
classified `Error`) and its cost at the batch price (half the list price, as both providers
bill batches); `cancel()` asks the provider to stop.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Final

import msgspec

from ..errors import ErrorCode, HarnessError, LlmError
from ..events_batch import BatchCreated, BatchCreateStarted, BatchEnded, BatchPlanned, BatchUploaded
from ..runtime import GenerateResult, LlmRuntime
from ..vocab import GenerateOptions
from ..vocab.pricing import ModelPricing

if TYPE_CHECKING:
    from ..adapters.providers.batches import BatchInfo, RouteBatches
    from ..session import SessionLog

__all__ = ["BATCH_DISCOUNT", "BatchItem", "BatchJob", "BatchStatus"]

BATCH_DISCOUNT: Final = Decimal("0.5")
"""Batch calls cost half the list price (OpenAI and Anthropic)."""
_FIRST_POLL_S: Final = 2.0
_MAX_POLL_S: Final = 60.0

Sleep = Callable[[float], Awaitable[object]]


class BatchStatus(msgspec.Struct, frozen=True, kw_only=True):
    """Where a job stands: ``running``, ``canceling``, ``ended`` or ``failed`` (the provider's
    own word in `provider_status`)."""

    job_id: str
    batch_id: str
    status: str
    provider_status: str


class BatchItem(msgspec.Struct, frozen=True, kw_only=True):
    """One request's outcome: its index, the assembled result and its cost (None: unknown)."""

    index: int
    result: GenerateResult
    cost: Decimal | None


class BatchJob:
    """A durable provider batch job (see the module docstring)."""

    def __init__(
        self,
        log: SessionLog,
        runtime: LlmRuntime,
        planned: BatchPlanned,
        *,
        file_id: str | None = None,
        create_started: int | None = None,
        batch_id: str | None = None,
        ended: BatchEnded | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.log = log
        self.runtime = runtime
        self.planned = planned
        self.file_id = file_id
        self.create_started = create_started
        self.batch_id = batch_id
        self.ended = ended
        self._sleep = sleep

    @property
    def job_id(self) -> str:
        """The job id (its session id in the log)."""
        return self.planned.job_id

    # ---- starting and continuing ------------------------------------------------------------

    @classmethod
    async def submit(
        cls,
        rt: LlmRuntime,
        log: SessionLog,
        provider: str,
        model: str,
        requests: Sequence[GenerateOptions],
        *,
        job_id: str | None = None,
    ) -> BatchJob:
        """Plan the job in the log, then upload and create it; the job's state is in the log
        when this returns. Requests must all name `provider` and `model` (`INVALID_ARGS`)."""
        items = tuple(requests)
        if not items:
            raise HarnessError("a batch needs at least one request", ErrorCode.INVALID_ARGS)
        for i, options in enumerate(items):
            if not isinstance(options, GenerateOptions):
                raise HarnessError(
                    f"requests[{i}] is a {type(options).__name__}, not a GenerateOptions",
                    ErrorCode.INVALID_ARGS,
                )
            if (options.provider, options.model) != (provider, model):
                raise HarnessError(
                    f"requests[{i}] names {options.provider}:{options.model}, but a batch runs "
                    f"one route and model ({provider}:{model}); submit one batch per model",
                    ErrorCode.INVALID_ARGS,
                )
        calls = _batches(rt, provider)
        calls.request_lines(items)  # every check before the log or the provider is touched
        planned = BatchPlanned(
            job_id=job_id or f"batch-{uuid.uuid4().hex}",
            provider=provider,
            model=model,
            api=calls.api,
            planned_ms=int(time.time() * 1000),
            requests=items,
        )
        await log.append(planned.job_id, planned, barrier=True)
        job = cls(log, rt, planned)
        await job._advance(calls, recovering=False)
        return job

    @classmethod
    async def open(cls, log: SessionLog, job_id: str, rt: LlmRuntime | None = None) -> BatchJob:
        """The job `job_id` from the log (after a restart); finishes a step the log does not
        show as done without repeating one the provider already did. `rt` defaults to
        `mw.open_runtime()` (the config file's routes)."""
        events = await log.read(job_id)
        planned = next((e.data for e in events if isinstance(e.data, BatchPlanned)), None)
        if planned is None:
            raise HarnessError(f"no batch job {job_id!r} in the log", ErrorCode.SESSION_NOT_FOUND)
        if rt is None:
            from ..agent.setup import open_runtime

            rt = open_runtime()
        job = cls(log, rt, planned)
        for event in events:
            data = event.data
            if isinstance(data, BatchUploaded):
                job.file_id = data.file_id
            elif isinstance(data, BatchCreateStarted):
                job.create_started = data.started_ms
            elif isinstance(data, BatchCreated):
                job.batch_id = data.batch_id
            elif isinstance(data, BatchEnded):
                job.ended = data
        if job.batch_id is None:
            await job._advance(_batches(rt, planned.provider), recovering=True)
        return job

    async def _advance(self, calls: RouteBatches, *, recovering: bool) -> None:
        """Upload (OpenAI) and create, each step logged before the next; `recovering` first
        asks the provider for an input file a dead process may have uploaded. The create is
        looked up only when the log says one may have been sent (`batch/create-started`)."""
        planned = self.planned
        lines = calls.request_lines(planned.requests)
        if calls.api == "openai" and self.file_id is None:
            found_file = await calls.find_file(planned.job_id) if recovering else None
            file_id = found_file or await calls.upload(planned.job_id, lines)
            await self.log.append(planned.job_id, BatchUploaded(file_id=file_id), barrier=True)
            self.file_id = file_id
        if self.batch_id is not None:
            return
        found = None
        if self.create_started is not None:
            count = len(planned.requests)
            found = await calls.find_batch(planned.job_id, count, self.create_started)
        if found is None:
            started = int(time.time() * 1000)
            await self.log.append(
                planned.job_id, BatchCreateStarted(started_ms=started), barrier=True
            )
            self.create_started = started
            found = await calls.create(planned.job_id, self.file_id, lines, planned.model)
        await self.log.append(planned.job_id, BatchCreated(batch_id=found), barrier=True)
        self.batch_id = found

    # ---- following it ---------------------------------------------------------------------

    def _calls(self) -> RouteBatches:
        return _batches(self.runtime, self.planned.provider)

    def _batch_id(self) -> str:
        if self.batch_id is None:  # pragma: no cover - submit/open always create it
            raise HarnessError(f"batch job {self.job_id} was never created", ErrorCode.INVARIANT)
        return self.batch_id

    async def _info(self) -> BatchInfo:
        from ..adapters.providers.batches import BatchInfo

        if self.ended is not None:
            e = self.ended
            return BatchInfo(
                batch_id=self._batch_id(),
                status="failed" if e.status == "failed" else "ended",
                provider_status=e.status,
                output_file_id=e.output_file_id,
                error_file_id=e.error_file_id,
                results_url=e.results_url,
            )
        info = await self._calls().retrieve(self._batch_id())
        if info.status in ("ended", "failed"):
            self.ended = BatchEnded(
                status=info.provider_status if info.status == "ended" else "failed",
                output_file_id=info.output_file_id,
                error_file_id=info.error_file_id,
                results_url=info.results_url,
            )
            await self.log.append(self.job_id, self.ended, barrier=True)
        return info

    async def status(self) -> BatchStatus:
        """The job's state now (asked of the provider until it ended)."""
        info = await self._info()
        return BatchStatus(
            job_id=self.job_id,
            batch_id=info.batch_id,
            status=info.status,
            provider_status=info.provider_status,
        )

    async def wait(self, poll_s: float | None = None) -> BatchStatus:
        """Poll until the batch ended (every `poll_s` seconds, else 2 s doubling to 60 s)."""
        delay = _FIRST_POLL_S if poll_s is None else poll_s
        while True:
            state = await self.status()
            if state.status in ("ended", "failed"):
                return state
            await self._sleep(delay)
            if poll_s is None:
                delay = min(delay * 2, _MAX_POLL_S)

    async def results(self) -> list[BatchItem]:
        """One item per request, in request order (the batch must have ended)."""
        info = await self._info()
        if info.status not in ("ended", "failed"):
            raise LlmError(
                f"batch job {self.job_id} is still {info.provider_status}: wait() first",
                ErrorCode.INVALID_REQUEST,
            )
        calls = self._calls()
        documents = await calls.result_documents(info)
        planned = self.planned
        results = calls.results(documents, len(planned.requests), planned.model)
        pricing = (await self.runtime.resolve_model_info(planned.provider, planned.model)).pricing
        return [BatchItem(index=i, result=r, cost=_cost(pricing, r)) for i, r in enumerate(results)]

    async def cancel(self) -> BatchStatus:
        """Ask the provider to cancel the batch; the state right after."""
        await self._calls().cancel(self._batch_id())
        return await self.status()


def _cost(pricing: ModelPricing | None, result: GenerateResult) -> Decimal | None:
    if pricing is None:
        return None
    if result.usage is None:
        return Decimal(0)
    return pricing.cost(result.usage) / (1 / BATCH_DISCOUNT)  # a division keeps no trailing 0


def _batches(rt: LlmRuntime, provider: str) -> RouteBatches:
    adapter = rt.route_adapter(provider)
    origin = adapter.origin
    if not hasattr(origin, "batches"):
        raise LlmError(
            f'provider "{provider}" has no batch API (its adapter serves none)',
            ErrorCode.UNSUPPORTED_OPTION,
        )
    calls: RouteBatches = origin.batches(provider)
    return calls
