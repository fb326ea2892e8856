"""`modelwire replay FILE`: re-run an exported session offline and check it reproduces.

The export's recorded model calls are served by `ReplayAdapter.from_file` under the recorded
provider route (failed attempts included, so `RetryPlugin` takes the same recovery path), its
tool calls are answered with the recorded tool results, and its user messages are replayed turn
by turn into a new session. The command exits 0 when every assistant message of the replay equals
the recorded one, 1 otherwise.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from ..errors import HarnessError
from .errors import fail
from .terminal import TerminalConsole

if TYPE_CHECKING:
    from ..agent import Tool
    from ..session import Event, SessionLog
    from ..vocab import ContentBlock, Message, ToolSchema
    from ..vocab.json import JsonValue

__all__ = ["RecordedSession", "recorded_session", "run_replay"]


@dataclass(frozen=True, slots=True)
class RecordedSession:
    """What a replay needs from an export: route, prompt, inputs, expected outputs and the
    recorded tool results (the tool schemas come from the recorded request headers)."""

    session_id: str
    provider: str
    model: str
    system: str | None
    turn_inputs: tuple[Message, ...]
    answers: tuple[Message, ...]
    tool_results: dict[tuple[str, str], deque[tuple[ContentBlock, ...]]] = field(
        default_factory=dict
    )


def recorded_session(session_id: str, events: Sequence[Event]) -> RecordedSession:
    """Extract the replay inputs from an export's events (`CliError` when it holds no turn)."""
    from ..session import (
        AssistantMessage,
        RequestHeader,
        ToolCallRecord,
        ToolResultRecord,
        TurnStart,
        UserMessage,
    )
    from ..vocab import ToolResultBlock

    header = next((e.data.header for e in events if isinstance(e.data, RequestHeader)), None)
    if header is None:
        fail(f"session {session_id!r} records no model request (no request/header event)")
    inputs: list[Message] = []
    answers: list[Message] = []
    calls: dict[str, tuple[str, str]] = {}
    results: dict[tuple[str, str], deque[tuple[ContentBlock, ...]]] = {}
    awaiting_input = False
    for event in events:
        data = event.data
        if isinstance(data, TurnStart):
            awaiting_input = True
        elif isinstance(data, UserMessage) and awaiting_input:
            inputs.append(data.message)
            awaiting_input = False
        elif isinstance(data, AssistantMessage) and not data.interrupted:
            answers.append(data.message)
        elif isinstance(data, ToolCallRecord):
            calls[data.call_id] = (data.name, data.arguments)
        elif isinstance(data, ToolResultRecord) and data.call_id in calls:
            content = data.message.content
            if len(content) == 1 and isinstance(content[0], ToolResultBlock):
                content = content[0].content
            results.setdefault(calls[data.call_id], deque()).append(content)
    if not inputs:
        fail(f"session {session_id!r} records no user turn to replay")
    return RecordedSession(
        session_id=session_id,
        provider=header.config.provider,
        model=header.config.model,
        system=header.system,
        turn_inputs=tuple(inputs),
        answers=tuple(answers),
        tool_results=results,
    )


def _recorded_tools(recording: RecordedSession, tools: Sequence[ToolSchema]) -> list[Tool]:
    """Tools answering each call with the result recorded for the same name and arguments."""
    import msgspec

    from ..agent import Tool

    made: list[Tool] = []
    for schema in tools:
        name = schema.name

        def answer(args: dict[str, JsonValue], name: str = name) -> tuple[ContentBlock, ...]:
            wanted = msgspec.json.encode(args)
            for (tool, raw), queue in recording.tool_results.items():
                same = tool == name and msgspec.json.encode(msgspec.json.decode(raw)) == wanted
                if same and queue:
                    return queue.popleft()
            raise LookupError(f"no recorded result for {name}({wanted.decode()})")

        parameters = schema.parameters if isinstance(schema.parameters, Mapping) else {}
        made.append(Tool(name, schema.description, parameters, answer))
    return made


async def run_replay(file: str, *, log_option: str | None) -> int:
    """Replay FILE into a new session of the log; 0 when the replay matches the recording."""
    from ..adapters.replay import ReplayAdapter
    from ..agent import Agent
    from ..retry import RetryPlugin
    from ..runtime import LlmRuntime
    from ..session import RequestHeader
    from ..session.export import load_session_file
    from .demo import inspect_command, new_session_id
    from .live import LiveView
    from .logs import open_cli_log, shown_url

    path = Path(file)
    loaded = load_session_file(path)  # INVALID_REPLAY_FILE names the file and line
    recorded_id = loaded.header.session_id if loaded.header is not None else path.stem
    recording = recorded_session(recorded_id, loaded.events)
    header = next(e.data.header for e in loaded.events if isinstance(e.data, RequestHeader))
    console = TerminalConsole(highlight=False, soft_wrap=True)
    console.print(
        f"[bold]replaying[/] session {recorded_id} ({len(loaded.events)} events, "
        f"{len(recording.turn_inputs)} turn(s)) on {recording.provider}/{recording.model}"
    )
    async with open_cli_log(log_option) as (log, url):
        runtime = LlmRuntime()
        replay = ReplayAdapter.from_file(path)
        runtime.register_adapter([recording.provider], replay)
        view = LiveView(console)
        runtime.use(view.middleware)
        agent = Agent(
            runtime=runtime,
            log=log,
            provider=recording.provider,
            model=recording.model,
            system=recording.system,
            tools=[view.show_tool(t) for t in _recorded_tools(recording, header.tools or ())],
            plugins=[view, RetryPlugin()],
        )
        session_id = new_session_id("replay")
        try:
            for message in recording.turn_inputs:
                console.print(Text.assemble(("you: ", "bold green"), _text(message)))
                await agent.run_turn(session_id, message)
        finally:
            await agent.close()
        replayed = await _answers(log, session_id)
    same = [m.content for m in replayed] == [m.content for m in recording.answers]
    try:
        replay.assert_consumed()
    except HarnessError as err:
        console.print(Text(f"✗ {err}", style="red"))
        same = False
    verdict = (
        "[green]✓ matches the recording[/]" if same else "[red]✗ differs from the recording[/]"
    )
    console.print(f"{verdict} ({len(replayed)} of {len(recording.answers)} assistant messages)")
    console.print(f"replayed into session [bold]{session_id}[/] in {shown_url(url)}")
    console.print(f"  {inspect_command(session_id, url, log_option)}", style="bold")
    return 0 if same else 1


def _text(message: Message) -> str:
    from ..vocab import TextBlock

    return " ".join(b.text for b in message.content if isinstance(b, TextBlock))


async def _answers(log: SessionLog, session_id: str) -> tuple[Message, ...]:
    from ..session import AssistantMessage

    return tuple(
        e.data.message
        for e in await log.read(session_id)
        if isinstance(e.data, AssistantMessage) and not e.data.interrupted
    )
