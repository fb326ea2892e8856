"""The tool calls of one step: logged in call order, run concurrently, results committed in order.

Every `tool/call` is appended first (one append, in call order, durable before any tool runs but
the final-answer tool); then the calls run as tasks, at
most `limit` at a time, and each `tool/result` is appended as soon as it and every earlier result
are in, so the log always holds a prefix of the results in call order. Cancelling the turn
(also from inside a tool, through its `RunContext.signal`) cancels the running calls and waits
for them (no task outlives the step); calls left without a result are answered
`TOOL_INTERRUPTED` by the next `run_turn` or `resume_turn` (which runs a call of an idempotent
tool again instead, `rerun.py`), as a sequential step's would be. Every call runs inside the
agent's `on_tool` wrappers (an `execute_tool` span, say), in its own task; a call of the
final-answer tool is answered there by validating its arguments. A call given a `settled` outcome (a resumed Step's answer to a call it
does not run again) is neither logged nor run: that outcome is committed in its place. A call
whose tool asks for a person's approval (`approval.py`) is logged `needs_approval` and left for
the decision: the others run, and their results are committed in call order around it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import ErrorCode
from ..session.events import ToolCallRecord, ToolResultRecord
from ..session.log import SessionLog
from ..vocab import ToolCallBlock, tool_result_message
from .approval import asks_approval
from .cancel import TurnSignal, cancellation
from .context import RunContext
from .hooks import AgentLike, ToolHookContext
from .output import FINAL_TOOL, Accepted, OutputSpec
from .toolcall import ToolOutcome, run_tool_call
from .tools import Tool
from .wait import Sleep

__all__ = ["ToolRun"]

FINAL_ACCEPTED = "final answer received"


def _final_outcome(spec: OutputSpec, call: ToolCallBlock) -> ToolOutcome:
    verdict = spec.parse(call.arguments or "{}")
    if isinstance(verdict, Accepted):
        return ToolOutcome(tool_result_message(call.id, FINAL_ACCEPTED), False, None)
    text = (
        f"the final answer does not validate: {verdict.problem}; call `{FINAL_TOOL}` again "
        "with a corrected answer"
    )
    message = tool_result_message(call.id, text, is_error=True)
    return ToolOutcome(message, True, ErrorCode.OUTPUT_INVALID)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    """How the tool calls of a step run: the tools, at most `limit` at a time, timed by `sleep`;
    `final` is the output spec when the request offered the final-answer tool."""

    log: SessionLog
    agent: AgentLike
    tools: Mapping[str, Tool]
    sleep: Sleep
    limit: int
    final: OutputSpec | None

    def _server(self, name: str) -> str | None:
        """The MCP server of tool `name` (None: the agent's own tool, or no such tool)."""
        tool = self.tools.get(name)
        return None if tool is None else tool.server

    def _context(
        self, sid: str, turn: int, step: int, signal: TurnSignal, call: ToolCallBlock
    ) -> RunContext:
        return RunContext(
            agent=self.agent,
            log=self.log,
            session_id=sid,
            turn=turn,
            step=step,
            call_id=call.id,
            tool=call.name,
            signal=signal,
        )

    async def run(
        self,
        sid: str,
        turn: int,
        step: int,
        signal: TurnSignal,
        calls: Sequence[ToolCallBlock],
        *,
        settled: Mapping[str, ToolOutcome] | None = None,
        logged: bool = False,
    ) -> tuple[str, ...]:
        """Log, run and answer `calls`; a call whose id `settled` maps to an outcome is answered
        with it, in call order, and not run (see the module docstring). A call whose tool asks
        for approval is logged `needs_approval` and neither run nor answered: the ids of such
        calls are returned. `logged`: the `tool/call` records are in the log already (approved
        calls of a resumed turn), so none is appended and no approval is asked again."""
        if not calls:
            return ()
        if signal.cancelled:
            raise cancellation()
        given = dict(settled or {})
        running = [c for c in calls if c.id not in given]
        asks: set[str] = set()
        if running and not logged:
            for c in running:
                if (self.final is None or c.name != FINAL_TOOL) and await asks_approval(
                    self.tools.get(c.name), c, self._context(sid, turn, step, signal, c)
                ):
                    asks.add(c.id)
            # Durable before any tool runs: a successor never asks again for calls that ran.
            runs_tools = any(
                (self.final is None or c.name != FINAL_TOOL) and c.id not in asks for c in running
            )
            await self.log.append_many(
                sid,
                [
                    ToolCallRecord(
                        turn,
                        step,
                        c.id,
                        c.name,
                        c.arguments,
                        self._server(c.name),
                        needs_approval=c.id in asks,
                    )
                    for c in running
                ],
                barrier=runs_tools or bool(asks),
            )
        calls = [c for c in calls if c.id not in asks]
        gate = asyncio.Semaphore(self.limit)

        async def one(call: ToolCallBlock) -> ToolOutcome:
            async with gate:
                hooked = ToolHookContext(
                    agent=self.agent, session_id=sid, turn=turn, step=step, call=call, signal=signal
                )
                final = self.final
                if final is not None and call.name == FINAL_TOOL:

                    async def answer() -> ToolOutcome:
                        return _final_outcome(final, call)

                    return await self.agent.hooks.on_tool.run(hooked, answer)
                context = self._context(sid, turn, step, signal, call)
                return await self.agent.hooks.on_tool.run(
                    hooked, lambda: run_tool_call(call, self.tools, context, sleep=self.sleep)
                )

        tasks = [None if c.id in given else asyncio.ensure_future(one(c)) for c in calls]
        started = [t for t in tasks if t is not None]
        for running_task in started:
            signal.adopt(running_task)  # a tool cancelling the turn only marks it (as a hook would)
        watch = asyncio.ensure_future(signal.wait())
        try:
            for call, task in zip(calls, tasks, strict=True):
                if task is None:
                    outcome = given[call.id]
                else:
                    await asyncio.wait((task, watch), return_when=asyncio.FIRST_COMPLETED)
                    if not task.done():
                        raise cancellation()
                    outcome = task.result()
                await self.log.append(
                    sid,
                    ToolResultRecord(
                        turn=turn,
                        step=step,
                        call_id=call.id,
                        name=call.name,
                        message=outcome.message,
                        is_error=outcome.is_error,
                        error_code=outcome.error_code,
                        error_class=outcome.error_class,
                        server=self._server(call.name),
                    ),
                )
        finally:
            for pending in (*started, watch):
                pending.cancel()
            await asyncio.gather(*started, watch, return_exceptions=True)
        if signal.cancelled:
            raise cancellation()
        return tuple(c.id for c in running if c.id in asks)
