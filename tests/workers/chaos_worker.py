"""Child process of the worker-pool chaos tests: one `Worker` on the chaos model's route.

Usage: `python chaos_worker.py LOG_URL MODEL_BASE_URL COUNTER_FILE CONCURRENCY LEASE_MS`.

The worker claims tickets of the turn queue in the log at LOG_URL and runs them with an agent on
the keyless route `chaos` (`ChaosModel` at MODEL_BASE_URL, `per_turn=True`), whose script calls
the tool `bump` once per turn. `bump` is the side-effect counter: it appends the call id it
serves (`RunContext.call_id`) as one line to COUNTER_FILE (`O_APPEND`, write, fsync, close), so a
tool call executed twice shows as a duplicate line (the agent makes its `tool/call` record
durable before the tool runs). It is not idempotent: a call left without a
result by a killed worker is answered `TOOL_INTERRUPTED` on takeover, never run again.

`RetryPlugin` retries the model's 503s and stalls (the route's idle watchdog ends a stall with
`TIMEOUT`) under the route's normal policy (2 retries, small backoff). The lease is LEASE_MS long,
renewed every third of it. Every `say` line of the worker goes to stdout as `[PID] line`,
flushed (the parent reads them back); SIGTERM stops the worker (`Worker.stop`); SIGKILL and
SIGSTOP are the parent's faults.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys

from modelwire.agent import Agent, RunContext, Tool, open_runtime, tool
from modelwire.retry import RetryPlugin
from modelwire.session import SessionLog
from modelwire.wire.http import close_sessions
from modelwire.workers import Worker

ROUTE = "chaos"
MODEL = "chaos-1"
IDLE_TIMEOUT_MS = 500  # a stalled stream is cut (TIMEOUT) after this much silence
RETRY_POLICY = {"mode": "normal", "max_retries": 2, "initial_delay_ms": 20, "max_delay_ms": 200}


def say(line: str) -> None:
    """One worker line on stdout, prefixed with the pid, flushed at once."""
    print(f"[{os.getpid()}] {line}", flush=True)


def bump_tool(counter_file: str) -> Tool:
    """The `bump` tool: records the id of every call it executes in `counter_file`."""

    @tool
    async def bump(key: str, ctx: RunContext) -> str:
        """Bump the counter of a conversation.

        Args:
            key: The conversation key.
        """
        fd = os.open(counter_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.call_id}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return f"bumped {key}"

    return bump


async def main(
    log_url: str, base_url: str, counter_file: str, concurrency: int, lease_ms: float
) -> None:
    """Run the worker until SIGTERM."""
    profile = {
        "api": "openai-completions",
        "base_url": base_url,
        "auth": "none",
        "models": [{"id": MODEL}],
        "stream_idle_timeout_ms": IDLE_TIMEOUT_MS,
        "retry_policy": RETRY_POLICY,
    }
    runtime = open_runtime(config={"providers": {ROUTE: profile}})
    bump = bump_tool(counter_file)

    def factory(log: SessionLog) -> Agent[str]:
        return Agent(runtime, log, ROUTE, MODEL, tools=[bump], plugins=[RetryPlugin()])

    worker = Worker(
        log_url,
        factory,
        concurrency=concurrency,
        lease_ms=lease_ms,
        renew_ms=lease_ms / 3,
        poll_ms=100,
        grace_ms=lease_ms,
        say=say,
    )
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, worker.stop)
    try:
        stats = await worker.run()
    finally:
        await close_sessions()
    say(f"exit {stats}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format=f"[{os.getpid()}] %(name)s: %(message)s")
    url, model_url, counter, slots, lease = sys.argv[1:6]
    asyncio.run(main(url, model_url, counter, int(slots), float(lease)))
