"""Child process of `test_agent_crash_resume.py`: one `Agent.run_turn` against a loopback server.

Usage: `python crash_resume_child.py LOG_URL SESSION_ID BASE_URL USER_TEXT`. It prints `running`
before the turn and one JSON line `{"turn", "reason", "text"}` after it; the parent may SIGKILL it
at any point in between.
"""

from __future__ import annotations

import asyncio
import json
import sys

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.wire.http import close_sessions

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"
API_KEY = "sk-crash-resume-secret-0123456789"


async def main(url: str, session_id: str, base_url: str, text: str) -> None:
    """Run one turn of `session_id` on the log at `url` and report how it ended."""
    log = await open_log(url)
    try:
        runtime = LlmRuntime()
        adapter = DeepSeekAdapter(api_key=API_KEY, base_url=base_url, env={})
        runtime.register_adapter([ROUTE], adapter)
        # the parent SIGKILLed the previous writer: its open turn is known dead
        agent = Agent(runtime=runtime, log=log, provider=ROUTE, model=MODEL, repair_after_ms=0)
        print("running", flush=True)
        result = await agent.run_turn(session_id, text)
        report = {"turn": result.turn, "reason": result.reason.kind, "text": result.text}
        print(json.dumps(report), flush=True)
        await agent.close()
    finally:
        await close_sessions()
        await log.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
