"""One `modelwire chat` session: its agent, and one turn at a time with Ctrl-C and broken pipes.

`ChatSession.send(text)` runs one turn and returns a `TurnOutcome`. Ctrl-C (SIGINT) and a broken
stdout both cancel the running turn through `Agent.cancel` with a reason (`Ctrl-C`, `stdout
closed (broken pipe)`), which the agent loop records in `turn/end {aborted}` after saving the
streamed prefix; `sessions resume` and `sessions show` print that reason. The route, model and
system prompt can change between turns (`/model`, `/system`): the next turn uses a new agent
over the same runtime and log. With `factory` (`chat --agent MODULE:FACTORY`) the agent is the
user's, built over the chat's log.

A turn that pauses for approvals (issue 35) is settled by `approver` (on a terminal: the y/N
prompt of `chatprompt.py`): each waiting call is decided (`tool/decision`, by `modelwire chat`)
and the turn resumed, until it ends otherwise. Without an approver the outcome is `paused`, its
detail saying how to decide; nothing runs unasked.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..session import (
    AbortCause,
    AssistantMessage,
    TurnAborted,
    TurnBlocked,
    TurnCompleted,
    TurnEnd,
    TurnEndReason,
    TurnErrored,
    TurnMaxTokens,
    TurnPaused,
    TurnStart,
)
from ..vocab import ContentBlock
from .chatopts import CallOptions
from .errors import BAD_INPUT_CODES, EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..agent import Agent, PendingApproval, Tool, TurnResult
    from ..events_ratelimit import RateLimitNotice
    from ..mcp import MCPServer
    from ..meter import TokenMeter
    from ..runtime import LlmRuntime
    from ..session import SessionLog
    from ..vocab import LlmFailure, TokenUsage
    from .chatview import ChatView
    from .routes import RouteSet

__all__ = ["AgentMaker", "Approver", "ChatSession", "OutcomeKind", "TurnOutcome"]

OutcomeKind: TypeAlias = Literal[
    "completed", "max-tokens", "error", "blocked", "cancelled", "paused"
]
Approver: TypeAlias = (
    "Callable[[PendingApproval], Coroutine[object, object, tuple[bool, str | None]]]"
)
"""Asks a person about one waiting call: (approve, the reason of a denial or None)."""
AgentMaker: TypeAlias = "Callable[[SessionLog], Coroutine[object, object, Agent]]"


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    """How one turn ended, with what the user sees of it."""

    kind: OutcomeKind
    turn: int | None
    answer: str
    reasoning: str
    failure: LlmFailure | None = None
    cause: str | None = None
    usage: TokenUsage | None = None
    cost: Decimal | None = None
    detail: str | None = None  # how a turn ended that is none of the kinds above (e.g. a limit)

    @property
    def exit_code(self) -> int:
        """0 for an answer, 1 for a failed turn (2 when the failure is bad input), 130 cancelled."""
        if self.kind in ("completed", "max-tokens"):
            return 0
        if self.kind == "cancelled":
            return EXIT_INTERRUPTED
        if self.failure is not None and str(self.failure.code) in BAD_INPUT_CODES:
            return EXIT_BAD_INPUT
        return EXIT_FAILURE


class ChatSession:
    """The agent side of a chat: route, model, system prompt and options of the next turn."""

    def __init__(
        self,
        *,
        log: SessionLog,
        routes: RouteSet,
        session_id: str,
        route: str,
        model: str,
        system: str | None,
        options: CallOptions,
        tools: list[Tool],
        view: ChatView,
        mcp_servers: Sequence[MCPServer] = (),
        factory: AgentMaker | None = None,
        agent_spec: str | None = None,
        approver: Approver | None = None,
    ) -> None:
        from ..runtime import LlmRuntime

        self.log = log
        self.routes = routes
        self.session_id = session_id
        self.route = route
        self.model = model
        self.system = system
        self.options = options
        self.view = view
        self._tools = [view.show_tool(t) for t in tools]
        self._mcp = tuple(mcp_servers)  # started and stopped by the command: kept across /model
        self.runtime: LlmRuntime = LlmRuntime()
        self.runtime.use(view.middleware)
        self._registered: set[str] = set()
        self._agent: Agent | None = None
        self._meter: TokenMeter | None = None  # caught up with the session after each turn
        self.last_prompt: str | None = None
        self._factory = factory
        self._factory_spec = agent_spec  # `--agent MODULE:FACTORY`, for the how-to lines
        self.approver = approver

    async def configure(
        self, *, route: str | None = None, model: str | None = None, system: str | None = None
    ) -> None:
        """Change what the next turn uses: route and model (None keeps them) and the system
        prompt (None: none); the next turn runs on a new agent. A `--agent` chat's agent is
        the user's: changing it here is a `CliError`."""
        if self._factory is not None:
            from .errors import CliError

            raise CliError(
                f"the agent of --agent {self._factory_spec} sets its own route, model and system "
                "prompt: change them in its factory"
            )
        self.route = route if route is not None else self.route
        self.model = model if model is not None else self.model
        self.system = system
        agent, self._agent = self._agent, None
        if agent is not None:
            await agent.close()

    async def start(self) -> None:
        """Build the user's agent now (`factory`): its route, model and system become the
        chat's. Without a factory, nothing (the agent is built at the first turn)."""
        if self._factory is not None:
            agent = await self._current()
            self.route, self.model, self.system = agent.provider, agent.model, agent.system

    async def _current(self) -> Agent:
        if self._agent is None and self._factory is not None:
            agent = self._agent = await self._factory(self.log)
            agent.use(self.view)
            use = getattr(agent.runtime, "use", None)
            if callable(use):  # an `LlmRuntime`: the view sees the chunks as they stream
                use(self.view.middleware)
        if self._agent is None:
            from ..agent import Agent
            from ..retry import RetryPlugin

            if self.route not in self._registered:
                self.routes.register(self.runtime, [self.route])
                self._registered.add(self.route)
            self._agent = Agent(
                runtime=self.runtime,
                log=self.log,
                provider=self.route,
                model=self.model,
                system=self.system,
                tools=self._tools,
                mcp_servers=self._mcp,
                plugins=[self.view, RetryPlugin()],
                max_tokens=self.options.max_tokens,
                reasoning_effort=self.options.reasoning_effort,
                temperature=self.options.temperature,
            )
        return self._agent

    async def close(self) -> None:
        """Close the agent."""
        agent, self._agent = self._agent, None
        if agent is not None:
            await agent.close()

    async def send(self, text: str | list[ContentBlock]) -> TurnOutcome:
        """Run one turn with `text` (or text and attached blocks); Ctrl-C or a broken stdout
        cancels it (see the module doc)."""
        self.last_prompt = text if isinstance(text, str) else None  # attachments: one-shot only
        return await self.settle(await self._run(lambda a: a.run_turn(self.session_id, text)))

    async def resume(self) -> TurnOutcome:
        """Continue the turn a dead process left open (`Agent.resume_turn`), cancellable alike."""
        return await self._run(lambda agent: agent.resume_turn(self.session_id))

    async def settle(self, outcome: TurnOutcome) -> TurnOutcome:
        """While the turn is paused and an approver asks: decide its calls, resume it."""
        from ..agent.approval import approval_state

        while outcome.kind == "paused" and self.approver is not None:
            agent = await self._current()
            for call in (await approval_state(self.log, self.session_id)).undecided:
                approve, reason = await self.approver(call)
                by = "modelwire chat (terminal)"
                await agent.decide(self.session_id, call.call_id, approve, reason, by=by)
            outcome = await self.resume()
        return outcome

    async def paused(self) -> TurnOutcome | None:
        """The session's paused turn settled (asked, or resumed once all is decided), or None
        when its last turn is not paused."""
        from ..agent.approval import approval_state

        state = await approval_state(self.log, self.session_id)
        if state.paused_turn is None:
            return None
        if not state.undecided:
            return await self.settle(await self.resume())
        return await self.settle(await self._outcome(TurnPaused(), None))

    async def _show_wait(self, notice: RateLimitNotice) -> None:
        """One stderr line per client-side rate-limit wait of the turn's calls."""
        from rich.text import Text

        from .render import rate_limit_wait_line

        line = rate_limit_wait_line(notice.route, notice.reason, notice.wait_ms, notice.detail)
        with contextlib.suppress(OSError):  # stderr is gone: the turn still matters
            self.view.console.print(Text(line, style="yellow"))

    async def _run(
        self, start: Callable[[Agent], Coroutine[object, object, TurnResult]]
    ) -> TurnOutcome:
        from ..runtime.ratewait import listen_for_rate_limit_waits

        agent = await self._current()
        loop = asyncio.get_running_loop()
        with listen_for_rate_limit_waits(self._show_wait):  # the task copies the listener
            task = asyncio.ensure_future(start(agent))
        cause: str | None = None

        def cancel(reason: str) -> None:
            nonlocal cause
            if cause is not None or task.done():
                return
            cause = reason
            if not agent.cancel(self.session_id, AbortCause("user", reason)):
                task.cancel()

        def on_broken() -> None:  # called inside the turn's task: cancel it from outside
            loop.call_soon(cancel, "stdout closed (broken pipe)")

        self.view.on_broken = on_broken
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, cancel, "Ctrl-C")
        try:
            result = await task
        except asyncio.CancelledError:
            if cause is None:
                raise
            result = None
        finally:
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signal.SIGINT)
            self.view.on_broken = None
        return await self._outcome(result.reason if result is not None else None, cause)

    async def _outcome(self, reason: TurnEndReason | None, cause: str | None) -> TurnOutcome:
        """The outcome of the turn just run, read back from the log (the source of truth)."""
        from ..meter import TokenMeter
        from .render import message_answer

        start = await self.log.latest(self.session_id, "turn/start")
        events = await self.log.read(self.session_id, start.seq) if start is not None else []
        turn = start.data.turn if start is not None and isinstance(start.data, TurnStart) else None
        answer = "".join(self.view.attempt_text)
        for event in events:
            data = event.data
            if isinstance(data, TurnEnd) and data.turn == turn:
                reason = data.reason
            elif isinstance(data, AssistantMessage) and data.turn == turn:
                answer = message_answer(data.message)
        usage = cost = None
        if turn is not None:  # the whole log: the prices in effect may predate this turn
            if self._meter is None:
                self._meter = TokenMeter()
            await self._meter.catch_up(self.log, self.session_id)
            report = self._meter.report()
            usage, cost = report.turns.get(turn), report.turns_cost.get(turn)
        reasoning = "".join(self.view.reasoning_text)
        match reason:
            case TurnCompleted():
                return TurnOutcome("completed", turn, answer, reasoning, usage=usage, cost=cost)
            case TurnMaxTokens():
                return TurnOutcome("max-tokens", turn, answer, reasoning, usage=usage, cost=cost)
            case TurnBlocked():
                return TurnOutcome("blocked", turn, answer, reasoning, usage=usage, cost=cost)
            case TurnErrored(failure=failure):
                return TurnOutcome(
                    "error", turn, answer, reasoning, failure=failure, usage=usage, cost=cost
                )
            case TurnAborted(reason=why):
                return TurnOutcome("cancelled", turn, answer, reasoning, cause=why.reason or cause)
            case TurnPaused():
                from .chatprompt import how_to_decide

                detail = await how_to_decide(self.log, self.session_id, self._factory_spec)
                return TurnOutcome("paused", turn, answer, reasoning, usage=usage, detail=detail)
            case None if cause is not None:  # cancelled before the turn could be logged
                return TurnOutcome("cancelled", turn, answer, reasoning, cause=cause)
            case _:  # an agent limit, or a reason newer than this module: say which
                from .render import turn_reason_text

                detail = turn_reason_text(reason) if reason is not None else "no turn/end logged"
                return TurnOutcome(
                    "error", turn, answer, reasoning, usage=usage, cost=cost, detail=detail
                )
