"""The decided calls of a reopened paused turn: approved ones run (once), the others answered.

`resume_turn` reopens a paused turn (`turn/start {resumed_after}`, durable first) and hands its
decided calls here before the next Step: an approved call runs as the live Step would have run
it (inside the `on_tool` wrappers, at most `max_parallel_tools` at a time), a denied one is
answered `TOOL_DENIED` with the person's reason, an approved one whose tool the agent no longer
has is answered `UNKNOWN_TOOL`; results are committed in call order (`toolrun.py`). A process
that dies meanwhile leaves the reopened turn open: the next `resume_turn` answers what has no
result `TOOL_INTERRUPTED`, so an approved call never runs twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..session.events import ToolCallRecord, ToolDecision
from ..vocab import ToolCallBlock
from .approval import decided_outcome
from .step import StepFrame, StepRunner
from .toolcall import ToolOutcome
from .toolrun import ToolRun

__all__ = ["settle_decided"]


async def settle_decided(
    runner: StepRunner,
    frame: StepFrame,
    decided: Sequence[tuple[ToolCallRecord, ToolDecision]],
) -> None:
    """Run or answer the decided calls of the paused Step `frame` names (module docstring)."""
    if not decided:
        return
    await runner.tools.ready()  # an MCP tool is known (and runs) once its server is up
    settled: dict[str, ToolOutcome] = {}
    for record, decision in decided:
        outcome = decided_outcome(decision, runner.tools)
        if outcome is not None:
            settled[record.call_id] = outcome
    calls = [ToolCallBlock(r.call_id, r.name, r.arguments) for r, _ in decided]
    run = ToolRun(
        log=runner.log,
        agent=runner.agent,
        tools=runner.tools,
        sleep=runner.sleep,
        limit=runner.max_parallel_tools,
        final=None,
    )
    sid = frame.session.session_id
    await run.run(sid, frame.turn, frame.step, frame.signal, calls, settled=settled, logged=True)
