"""Child process of `test_mcp_resume.py`: one agent turn with the test MCP server over stdio.

Usage: `python mcp_child.py LOG_URL SESSION_ID MODEL_URL run|resume [idempotent]`. The server
inherits `$MCP_TEST_CALLS` and `$MCP_TEST_HELLO`. It prints `running` before the turn and one
JSON line `{"turn", "reason", "text"}` after it; the parent may SIGKILL it in between.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from modelwire.adapters.deepseek import DeepSeekAdapter
from modelwire.agent import Agent
from modelwire.mcp import MCPServer
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.wire.http import close_sessions

SERVER = Path(__file__).resolve().parent / "mcp_server.py"
ROUTE, MODEL, API_KEY = "deepseek-official", "deepseek-v4-flash", "sk-scenario-secret-0123456789"


async def main(url: str, sid: str, base_url: str, mode: str, *flags: str) -> None:
    log = await open_log(url)
    try:
        runtime = LlmRuntime()
        runtime.register_adapter(
            [ROUTE], DeepSeekAdapter(api_key=API_KEY, base_url=base_url, env={})
        )
        env = {k: os.environ[k] for k in ("MCP_TEST_CALLS", "MCP_TEST_HELLO")}
        server = MCPServer.stdio(
            sys.executable, [str(SERVER)], env=env, name="t", idempotent="idempotent" in flags
        )
        agent = Agent(runtime, log, ROUTE, MODEL, mcp_servers=[server], repair_after_ms=0)
        print("running", flush=True)
        result = await (agent.resume_turn(sid) if mode == "resume" else agent.run_turn(sid, "go"))
        print(json.dumps({"turn": result.turn, "reason": result.reason.kind, "text": result.text}))
        await agent.close()
    finally:
        await close_sessions()
        await log.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
