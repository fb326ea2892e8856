"""Child process of `test_retry_resume.py`: a DeepSeek turn with `RetryPlugin`, run or resumed.

Usage: `python retry_resume_child.py run|resume LOG_URL SESSION_ID BASE_URL`. `run` starts a turn
(`Agent.run_turn(sid, "hi")`), `resume` continues the open one (`Agent.resume_turn(sid)`). It
prints one JSON line `{"running": <epoch ms>}` right before the call and one JSON line
`{"turn", "reason", "text"}` after it; the parent may SIGKILL it at any point in between. The
route's policy retries twice with a 2 s backoff and no jitter.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.retry import RetryPlugin
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.wire.http import close_sessions

ROUTE = "deepseek-official"
MODEL = "deepseek-v4-flash"
API_KEY = "sk-retry-resume-secret-0123456789"
DELAY_MS = 2000
POLICY = {
    "mode": "normal",
    "max_retries": 2,
    "backoff": {"initial_delay_ms": DELAY_MS, "max_delay_ms": DELAY_MS, "jitter_ratio": 0},
}


async def main(mode: str, url: str, session_id: str, base_url: str) -> None:
    """Run (`run`) or resume (`resume`) the turn of `session_id` and report how it ended."""
    log = await open_log(url)
    try:
        runtime = LlmRuntime()
        adapter = DeepSeekAdapter(api_key=API_KEY, base_url=base_url, env={}, retry_policy=POLICY)
        runtime.register_adapter([ROUTE], adapter)
        agent = Agent(
            runtime=runtime, log=log, provider=ROUTE, model=MODEL, plugins=[RetryPlugin()]
        )
        print(json.dumps({"running": time.time_ns() // 1_000_000}), flush=True)
        if mode == "run":
            result = await agent.run_turn(session_id, "hi")
        else:
            result = await agent.resume_turn(session_id)
        report = {"turn": result.turn, "reason": result.reason.kind, "text": result.text}
        print(json.dumps(report), flush=True)
        await agent.close()
    finally:
        await close_sessions()
        await log.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
