"""Provider batch jobs that survive restarts: `BatchJob.submit(rt, log, provider, model,
requests=[GenerateOptions, ...])`, `BatchJob.open(log, job_id)` (see `job`)."""

from .job import BATCH_DISCOUNT, BatchItem, BatchJob, BatchStatus

__all__ = ["BATCH_DISCOUNT", "BatchItem", "BatchJob", "BatchStatus"]
