"""`modelwire batch submit|status|results`: provider batch jobs (`modelwire.batch`) for JSONL
files, durable in the session log.

`submit -m ROUTE:MODEL FILE` reads one request a line: ``{"prompt": "..."}`` or ``{"messages":
[{"role": "user", "content": "..."}, ...]}``, optionally with ``system``, ``max_tokens`` and
``temperature``; a bad line is a usage error naming its line number, before anything is sent.
It prints the job id. `status JOB` prints the job's state; `results JOB [--wait]` writes one
JSON line per request in order: ``{"index", "text", "finish", "usage", "cost", "error"}`` (cost
in USD as a decimal string at the batch price; null when unknown).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec

from .errors import fail

__all__ = ["batch_results", "batch_status", "batch_submit", "read_requests"]


def read_requests(path: str, route: str, model: str) -> list[object]:
    """The `GenerateOptions` of each line of `path` (a `CliError` naming the first bad line)."""
    from ..vocab import GenerateOptions, Message, assistant_message, user_message
    from ..vocab.messages import system_message

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"{path}: {exc.strerror or exc}")
    out: list[object] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path} line {number}"
        try:
            row = json.loads(raw)
        except ValueError:
            fail(f"{where}: not JSON")
        if not isinstance(row, dict):
            fail(f"{where}: give an object with prompt or messages")
        messages: list[Message] = []
        if isinstance(row.get("prompt"), str) and row["prompt"].strip():
            messages.append(user_message(row["prompt"]))
        elif isinstance(row.get("messages"), list) and row["messages"]:
            for i, item in enumerate(row["messages"]):
                role = item.get("role") if isinstance(item, dict) else None
                content = item.get("content") if isinstance(item, dict) else None
                if role not in ("user", "assistant", "system") or not isinstance(content, str):
                    fail(f"{where}: messages[{i}] needs a role (user, assistant, system) and text")
                if role == "user":
                    messages.append(user_message(content))
                elif role == "system":
                    messages.append(system_message(content))
                else:
                    from ..vocab import ModelSource, TextBlock

                    messages.append(
                        assistant_message([TextBlock(content)], ModelSource(route, model))
                    )
        else:
            fail(f"{where}: give a non-empty prompt or messages")
        extra = {k: row[k] for k in ("system", "max_tokens", "temperature") if k in row}
        try:
            out.append(GenerateOptions(route, model, tuple(messages), **extra))
        except (TypeError, msgspec.ValidationError) as exc:
            fail(f"{where}: {exc}")
    if not out:
        fail(f"{path} holds no requests")
    return out


def _split(value: str) -> tuple[str, str]:
    route, sep, model = value.partition(":")
    if not sep or not route or not model:
        fail(f"-m {value!r}: give ROUTE:MODEL, e.g. openai:gpt-4.1")
    return route, model


async def batch_submit(model: str, path: str, *, log_option: str | None, config: str | None) -> int:
    """Submit FILE's requests as one batch; prints the job id."""
    from ..agent.setup import open_runtime
    from ..batch import BatchJob
    from .logs import open_cli_log

    route, name = _split(model)
    requests = read_requests(path, route, name)
    rt = open_runtime(config)
    async with open_cli_log(log_option) as (log, _):
        job = await BatchJob.submit(rt, log, route, name, requests)  # type: ignore[arg-type]
    sys.stdout.write(job.job_id + "\n")
    return 0


async def batch_status(job_id: str, *, log_option: str | None, config: str | None) -> int:
    """Print the job's state."""
    from ..agent.setup import open_runtime
    from ..batch import BatchJob
    from .logs import open_cli_log

    async with open_cli_log(log_option) as (log, _):
        job = await BatchJob.open(log, job_id, open_runtime(config))
        state = await job.status()
    sys.stdout.write(msgspec.json.encode(state).decode() + "\n")
    return 0


async def batch_results(
    job_id: str, *, wait: bool, log_option: str | None, config: str | None
) -> int:
    """Write one JSON line per request, in order (waiting for the batch with `wait`)."""
    from ..agent.setup import open_runtime
    from ..batch import BatchJob
    from ..vocab import TextBlock
    from .logs import open_cli_log

    async with open_cli_log(log_option) as (log, _):
        job = await BatchJob.open(log, job_id, open_runtime(config))
        if wait:
            await job.wait()
        items = await job.results()
    failed = 0
    for item in items:
        result = item.result
        failure = result.failure
        failed += failure is not None
        row = {
            "index": item.index,
            "text": "".join(b.text for b in result.message.content if isinstance(b, TextBlock)),
            "finish": result.finish.kind,
            "usage": None if result.usage is None else msgspec.to_builtins(result.usage),
            "cost": None if item.cost is None else str(item.cost),
            "error": None
            if failure is None
            else {"code": failure.code, "message": failure.message},
        }
        sys.stdout.write(json.dumps(row) + "\n")
    return 1 if failed else 0
