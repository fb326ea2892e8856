"""The agent turn as AG-UI events (the `ag-ui-protocol` wire format, SSE), from the same log.

`POST /v1/agents/{name}/ag-ui` takes AG-UI's `RunAgentInput` (`threadId` is the session, the
`messages` end with the new user message and are checked against the log as the chat endpoint's
are) and answers `RUN_STARTED`, `STEP_STARTED` / `STEP_FINISHED`, `TEXT_MESSAGE_*`,
`REASONING_*`, `TOOL_CALL_START` / `_ARGS` / `_END` / `_RESULT`, a `CUSTOM` event
`tool_approval_request` for a call waiting for a person, and `RUN_FINISHED` (or `RUN_ERROR`).
`GET /v1/agents/{name}/ag-ui/{session_id}/stream` resumes it after `Last-Event-ID` /
`?from_seq=` as the chat stream does. The events are the UI message stream's parts
(`uistream.UiEncoder`) renamed, so both protocols say the same thing; each SSE `id` is the log
seq. The run id is the turn's UI message id (`<session>:t<turn>`), the same in every process.
"""

from __future__ import annotations

from typing import Final

import msgspec
from aiohttp import web

from ..events import Event
from .agents import find_agent, problem, resume_tail, start_turn, stream
from .chatbody import UiMessage, UiPart
from .uistream import Part, UiEncoder

__all__ = ["AGUI", "AguiEncoder", "ag_ui", "ag_ui_resume"]

AGUI: Final = "ag-ui"
HEADERS: Final = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-cache",
    "x-accel-buffering": "no",
}

_encode = msgspec.json.Encoder().encode
Wire = dict[str, object]


class _Message(msgspec.Struct, frozen=True):
    role: str
    content: str | list[dict[str, object]] | None = None
    id: str = ""

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        if isinstance(self.content, list):
            return "".join(str(p.get("text", "")) for p in self.content if p.get("type") == "text")
        return ""


class RunInput(msgspec.Struct, frozen=True, rename="camel"):
    """AG-UI's `RunAgentInput` (the fields read; the rest are accepted and ignored)."""

    thread_id: str
    run_id: str
    messages: tuple[_Message, ...]


class AguiEncoder:
    """AG-UI events of one turn, from the UI message stream parts of its events."""

    def __init__(self, session_id: str) -> None:
        self.ui = UiEncoder(session_id)
        self.session_id = session_id
        self.run_id = ""

    @property
    def finished(self) -> bool:
        return self.ui.finished

    def encode(self, event: Event) -> bytes:
        out: list[bytes] = []
        for part in self.ui.parts(event):
            for wire in self._events(part):
                out.append(b"id: %d\ndata: %s\n\n" % (event.seq, _encode(wire)))
        return b"".join(out)

    def fail(self, seq: int, message: str) -> bytes:
        self.ui.finished = True
        wire = {"type": "RUN_ERROR", "message": message, "code": "LOG_UNAVAILABLE"}
        return b"id: %d\ndata: %s\n\n" % (seq, _encode(wire))

    def _events(self, part: Part) -> list[Wire]:
        kind = part["type"]
        ids = {"threadId": self.session_id, "runId": self.run_id}
        match kind:
            case "start":
                self.run_id = str(part["messageId"])
                return [{"type": "RUN_STARTED", "threadId": self.session_id, "runId": self.run_id}]
            case "start-step" | "finish-step":
                name = "STEP_STARTED" if kind == "start-step" else "STEP_FINISHED"
                return [{"type": name, "stepName": "step"}]
            case "text-start":
                return [
                    {"type": "TEXT_MESSAGE_START", "messageId": part["id"], "role": "assistant"}
                ]
            case "text-delta":
                return [
                    {
                        "type": "TEXT_MESSAGE_CONTENT",
                        "messageId": part["id"],
                        "delta": part["delta"],
                    }
                ]
            case "text-end":
                return [{"type": "TEXT_MESSAGE_END", "messageId": part["id"]}]
            case "reasoning-start":
                return [
                    {"type": "REASONING_START", "messageId": part["id"]},
                    {
                        "type": "REASONING_MESSAGE_START",
                        "messageId": part["id"],
                        "role": "reasoning",
                    },
                ]
            case "reasoning-delta":
                return [
                    {
                        "type": "REASONING_MESSAGE_CONTENT",
                        "messageId": part["id"],
                        "delta": part["delta"],
                    }
                ]
            case "reasoning-end":
                return [
                    {"type": "REASONING_MESSAGE_END", "messageId": part["id"]},
                    {"type": "REASONING_END", "messageId": part["id"]},
                ]
            case "tool-input-start":
                return [
                    {
                        "type": "TOOL_CALL_START",
                        "toolCallId": part["toolCallId"],
                        "toolCallName": part["toolName"],
                    }
                ]
            case "tool-input-delta":
                return [
                    {
                        "type": "TOOL_CALL_ARGS",
                        "toolCallId": part["toolCallId"],
                        "delta": part["inputTextDelta"],
                    }
                ]
            case "tool-input-available":
                return [{"type": "TOOL_CALL_END", "toolCallId": part["toolCallId"]}]
            case "tool-approval-request":
                value = {"toolCallId": part["toolCallId"]}
                return [{"type": "CUSTOM", "name": "tool_approval_request", "value": value}]
            case "tool-output-available" | "tool-output-error" | "tool-output-denied":
                content = part.get("output", part.get("errorText", "denied by a person"))
                return [
                    {
                        "type": "TOOL_CALL_RESULT",
                        "messageId": f"{part['toolCallId']}:result",
                        "toolCallId": part["toolCallId"],
                        "content": str(content),
                        "role": "tool",
                    }
                ]
            case "error":
                return [{"type": "RUN_ERROR", "message": part["errorText"]}]
            case "finish":
                return [] if self._errored(part) else [{"type": "RUN_FINISHED", **ids}]
            case _:
                return []

    @staticmethod
    def _errored(part: Part) -> bool:
        return part.get("finishReason") in ("error", "other")


def _maker(session_id: str) -> AguiEncoder:
    return AguiEncoder(session_id)


def _as_ui(messages: tuple[_Message, ...]) -> list[UiMessage]:
    out: list[UiMessage] = []
    for message in messages:
        parts = (UiPart("text", message.text()),)
        if message.role == "user":
            out.append(UiMessage("user", parts, message.id))
        elif message.role == "assistant":
            out.append(UiMessage("assistant", parts, message.id))
    return out


async def ag_ui(request: web.Request) -> web.StreamResponse:
    """`POST /v1/agents/{name}/ag-ui` (module docstring)."""
    found = find_agent(request)
    if isinstance(found, web.Response):
        return found
    host, agent, _ = found
    try:
        body = msgspec.json.decode(await request.read(), type=RunInput)
    except msgspec.ValidationError as error:
        return problem(400, "INVALID_REQUEST", f"the AG-UI RunAgentInput is invalid: {error}")
    except msgspec.DecodeError:
        return problem(400, "INVALID_REQUEST", "the AG-UI RunAgentInput is not JSON")
    if not body.thread_id:
        return problem(
            400, "INVALID_REQUEST", "the RunAgentInput's threadId (the session) is empty"
        )
    if not body.messages or body.messages[-1].role != "user" or not body.messages[-1].text():
        return problem(
            400,
            "INVALID_REQUEST",
            "the RunAgentInput's messages must end with a user message's text",
        )
    sid = body.thread_id
    earlier = _as_ui(body.messages[:-1])
    text = body.messages[-1].text()
    tail = await start_turn(host, agent, sid, earlier, text, AGUI, lambda: _maker(sid))
    if isinstance(tail, web.Response):
        return tail
    return await stream(request, host, tail, None, HEADERS)


async def ag_ui_resume(request: web.Request) -> web.StreamResponse:
    """`GET /v1/agents/{name}/ag-ui/{session_id}/stream` (module docstring)."""
    sid = request.match_info["session_id"]
    found = await resume_tail(request, AGUI, lambda: _maker(sid))
    if isinstance(found, web.Response):
        return found
    host, tail, after = found
    return await stream(request, host, tail, after, HEADERS)
