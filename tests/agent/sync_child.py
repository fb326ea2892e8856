"""Child process of `test_agent_sync.py`: sync calls from a plain script (no event loop anywhere).

Usage: `python sync_child.py MODE LOG_URL`. `plain` runs one turn with `run_sync` and one call
with `generate_sync`, printing both answers. `ctrl-c` starts a turn whose stream hangs, prints
`streaming` once the model is called, and reports after the parent's SIGINT: `interrupted`, then
the reason of the turn's `turn/end` as read back from the log.
"""

from __future__ import annotations

import asyncio
import sys

from agent_helpers import Hang, ScriptedAdapter, text_script

from modelwire.agent import Agent
from modelwire.runtime import LlmRuntime
from modelwire.session import open_log
from modelwire.vocab import BlockStart, GenerateOptions, TextDelta, user_message


def main(mode: str, url: str) -> None:
    runtime = LlmRuntime()
    adapter = ScriptedAdapter()
    runtime.register_adapter(["scripted"], adapter)
    agent = Agent.from_model("scripted:m1", log=url, runtime=runtime)
    if mode == "plain":
        adapter.queue(text_script("hello from run_sync"), text_script("hello from generate"))
        print(agent.run_sync("sync", "hi").output)
        ask = GenerateOptions("scripted", "m1", (user_message("hi"),))
        answer = runtime.generate_sync(ask).message.content[0]
        print(getattr(answer, "text", answer))
        return
    adapter.queue([BlockStart(0, "text"), TextDelta(0, "partial"), Hang()])
    adapter.on_stream = lambda options: print("streaming", flush=True)
    try:
        agent.run_sync("sync", "hang")
    except KeyboardInterrupt:
        print("interrupted", flush=True)

    async def reason() -> str:
        log = await open_log(url)
        try:
            end = await log.latest("sync", "turn/end")
            return "none" if end is None else end.data.reason.kind  # type: ignore[attr-defined]
        finally:
            await log.close()

    print(asyncio.run(reason()), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
