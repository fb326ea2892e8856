"""The `modelwire batch …` commands (typer); the work is in `batchcli.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, LogOption, examples

__all__ = ["batch_app"]

batch_app = typer.Typer(
    help="Provider batch jobs (OpenAI Batch API, Anthropic Message Batches, Gemini batch mode) at "
    "the batch price, "
    "durable in the session log: a job submitted once is never submitted again, even after a "
    "crash.",
    short_help="Submit JSONL files as provider batches; status and results.",
    no_args_is_help=True,
    add_completion=False,
)

JobArgument = Annotated[str, typer.Argument(metavar="JOB", help="Job id.", show_default=False)]


@batch_app.command(
    "submit",
    short_help="Submit a JSONL file of requests as one batch.",
    epilog=examples("modelwire batch submit -m openai:gpt-4.1 requests.jsonl --log jobs.db"),
)
def batch_submit(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="JSONL requests.", show_default=False)
    ],
    model: Annotated[
        str, typer.Option("-m", "--model", metavar="ROUTE:MODEL", help="Route and model.")
    ],
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Submit FILE (one request a line: {"prompt": ...} or {"messages": [...]}, optionally
    system, max_tokens, temperature) as one batch of ROUTE:MODEL; prints the job id."""

    async def go() -> int:
        from .batchcli import batch_submit as work

        return await work(model, file, log_option=log, config=config)

    run_async(go, debug=debug)


@batch_app.command("status", short_help="Print a job's state.")
def batch_status(
    job: JobArgument, config: ConfigOption = None, log: LogOption = None, debug: DebugOption = False
) -> None:
    """Print JOB's state as JSON: job_id, batch_id, status (running, canceling, ended, failed),
    provider_status."""

    async def go() -> int:
        from .batchcli import batch_status as work

        return await work(job, log_option=log, config=config)

    run_async(go, debug=debug)


@batch_app.command(
    "results",
    short_help="Write a job's results, one JSON line per request.",
    epilog=examples("modelwire batch results batch-1a2b… --wait --log jobs.db"),
)
def batch_results(
    job: JobArgument,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the batch to end first.")] = False,
    config: ConfigOption = None,
    log: LogOption = None,
    debug: DebugOption = False,
) -> None:
    """Write one JSON line per request of JOB, in order: index, text, finish, usage, cost (USD,
    batch price), error. Exit 1 when any request failed."""

    async def go() -> int:
        from .batchcli import batch_results as work

        return await work(job, wait=wait, log_option=log, config=config)

    run_async(go, debug=debug)
