"""Running again, in a resumed turn, the unanswered calls of tools declared idempotent.

An open Step a dead process left after committing its assistant message may hold tool calls
without a `tool/result`. A tool may have side effects and may already have run, so such a call is
answered `TOOL_INTERRUPTED` — unless its tool is `idempotent` (safe to run twice): then
`resume_turn` runs it again, through the live Step's path (`ToolRun`: a new `tool/call`, the
`on_tool` hooks, `timeout_ms` by the runner's sleep, at most `max_parallel_tools` at a time, each
`tool/result` committed in call order). The other calls, and calls naming no tool of the agent,
keep their `TOOL_INTERRUPTED` answer, committed in its place in call order. `run_turn`'s repair of
an abandoned turn never runs anything (`repair.py`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..session.events import StepEnd, ToolResultRecord
from ..vocab import ContentBlock, ToolCallBlock
from .step import StepFrame, StepRunner
from .toolcall import ToolOutcome
from .toolrun import ToolRun
from .tools import Tool

__all__ = ["rerun_calls", "rerun_step"]


def _idempotent(tools: Mapping[str, Tool], call: ToolCallBlock) -> bool:
    tool = tools.get(call.name)
    return tool is not None and tool.idempotent


def _outcome(record: ToolResultRecord) -> ToolOutcome:
    return ToolOutcome(record.message, record.is_error, record.error_code, record.error_class)


def rerun_calls(
    tools: Mapping[str, Tool], content: Sequence[ContentBlock], unanswered: Collection[str]
) -> list[ToolCallBlock]:
    """The tool calls of `content` whose id is `unanswered` and whose tool (by name, in `tools`)
    is idempotent, in call order."""
    return [
        block
        for block in content
        if isinstance(block, ToolCallBlock) and block.id in unanswered and _idempotent(tools, block)
    ]


async def rerun_step(
    runner: StepRunner,
    frame: StepFrame,
    content: Sequence[ContentBlock],
    interrupted: Sequence[ToolResultRecord],
) -> None:
    """Answer the unanswered calls of the open Step's committed message `content`, then end it.

    `interrupted` holds the `TOOL_INTERRUPTED` answer of every unanswered call
    (`interrupted_results`). Calls of idempotent tools run again (see the module docstring); the
    other calls of `content` get their answer in call order; answers to calls of no other message
    are appended first. `step/end` is always written, as a live Step's is.
    """
    sid = frame.session.session_id
    answers = {record.call_id: record for record in interrupted}
    calls = [b for b in content if isinstance(b, ToolCallBlock) and b.id in answers]
    ids = {call.id for call in calls}
    settled = {
        call.id: _outcome(answers[call.id]) for call in calls if not _idempotent(runner.tools, call)
    }
    run = ToolRun(
        log=runner.log,
        agent=runner.agent,
        tools=runner.tools,
        sleep=runner.sleep,
        limit=runner.max_parallel_tools,
        final=None,  # the final-answer tool is no tool of the agent: never run again
    )
    try:
        others = [record for record in interrupted if record.call_id not in ids]
        if others:
            await runner.log.append_many(sid, others)
        await run.run(sid, frame.turn, frame.step, frame.signal, calls, settled=settled)
    finally:
        await runner.log.append(sid, StepEnd(frame.turn, frame.step))
