"""Child process of `test_agent_limits.py`: a turn whose model keeps calling a tool, killed mid-way.

Usage: `python limits_child.py LOG_URL SESSION_ID`. The scripted model calls `work` on every step;
the third call prints `stuck` and never returns, so the parent can SIGKILL the process with two
steps complete and the third one's tool call unanswered.
"""

from __future__ import annotations

import asyncio
import sys

from agent_helpers import ScriptedAdapter, tool_script

from modelwire.agent import Agent
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log


async def main(url: str, session_id: str) -> None:
    log = await open_log(url)
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    adapter.queue(*(tool_script(f"call-{i}", "work", "{}") for i in range(20)))
    runtime.register_adapter(["scripted"], adapter)
    calls = 0

    async def work() -> str:
        nonlocal calls
        calls += 1
        if calls == 3:
            await log.flush()
            print("stuck", flush=True)
            await asyncio.Event().wait()
        return f"done {calls}"

    agent = Agent(runtime, log, "scripted", "m1", tools=[work], max_steps=50)
    await agent.run_turn(session_id, "keep working")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
