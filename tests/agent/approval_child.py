"""Child process of `test_agent_approval_processes.py`: one approval step on a shared log.

Usage: `python approval_child.py LOG_URL SESSION_ID MODE [ARGS...]` with `$APPROVAL_MODEL_URL`
and `$APPROVAL_COUNTER` set (`approval_agent.py`). Modes: `run TEXT [hold]` (one `run_turn`;
with `hold`, print `holding` after it and wait to be killed), `decide CALL_ID=yes|no ...` (one
decision per argument, by `child-<pid>`), `resume`. Each prints one JSON line:
`{"reason", "turn", "text", "pending"}`, or for `decide` `{"decided": [[call, approve, by]]}`,
or on a `HarnessError` `{"code", "message"}`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from approval_agent import make_agent

from modelwire.errors import HarnessError
from modelwire.session import open_log
from modelwire.wire.http import close_sessions


async def main(url: str, session_id: str, mode: str, *args: str) -> None:
    log = await open_log(url)
    agent = make_agent(log)
    try:
        try:
            if mode == "decide":
                decided = []
                for pair in args:
                    call_id, answer = pair.split("=")
                    by = f"child-{os.getpid()}"
                    made = await agent.decide(session_id, call_id, answer == "yes", by=by)
                    decided.append([made.call_id, made.approve, made.by])
                print(json.dumps({"decided": decided}), flush=True)
                return
            if mode == "run":
                result = await agent.run_turn(session_id, args[0])
            else:
                result = await agent.resume_turn(session_id)
        except HarnessError as exc:
            print(json.dumps({"code": exc.code, "message": exc.message}), flush=True)
            return
        report = {
            "reason": result.reason.kind,
            "turn": result.turn,
            "text": result.text,
            "pending": [p.call_id for p in result.pending],
        }
        print(json.dumps(report), flush=True)
        if args[1:2] == ("hold",):
            print("holding", flush=True)
            await asyncio.Event().wait()
    finally:
        await agent.close()
        await close_sessions()
        await log.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
