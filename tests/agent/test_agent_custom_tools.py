"""Custom (free-text) tools and the provider client tools through the agent, end to end: a real
127.0.0.1 server plays an OpenAI Responses route with the recorded `custom_tool_call`,
`apply_patch_call` and `local_shell_call` streams (`../shared/fixtures3/openai-responses`), the
agent runs the user's implementation with the raw input (or the operation / action fields), and
the next request carries the call as it came and its output in the item type the API expects."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from catchall import serve_all

from modelwire import FreeText, LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.agent import Agent, tool
from modelwire.errors import HarnessError
from modelwire.session import open_log

RECORDINGS = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures3" / "openai-responses"
)
if not RECORDINGS.is_dir():
    raise RuntimeError(f"recorded fixtures absent: {RECORDINGS} (CI must fail, not skip)")
FINAL = (
    b'event: response.output_item.added\ndata: {"type":"response.output_item.added",'
    b'"output_index":0,"item":{"type":"message","id":"msg_2","content":[]}}\n\n'
    b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
    b'"output_index":0,"delta":"Done."}\n\n'
    b'event: response.output_item.done\ndata: {"type":"response.output_item.done",'
    b'"output_index":0,"item":{"type":"message","id":"msg_2","content":[{"type":"output_text",'
    b'"text":"Done."}]}}\n\n'
    b'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r2",'
    b'"status":"completed","usage":{"input_tokens":9,"output_tokens":2}}}\n\n'
)


class Responses:
    """Answers each POST with the next body (the last repeats), recording the request bodies."""

    def __init__(self, *bodies: bytes) -> None:
        self.bodies = list(bodies)
        self.seen: list[dict[str, Any]] = []
        self.url = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.seen.append(json.loads(await request.read()))
        body = self.bodies[min(len(self.seen), len(self.bodies)) - 1]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
        return response


@pytest.fixture
async def agent_for() -> AsyncIterator[Any]:
    runners: list[web.AppRunner] = []

    async def make(server: Responses, tools: list[Any]) -> Agent[Any]:
        runner, server.url = await serve_all(server.handle)
        runners.append(runner)
        profile = {
            "api": "openai-responses",
            "base_url": server.url,
            "api_key_env": "K",
            "models": [{"id": "gpt-5.1"}],
        }
        adapter = ProvidersAdapter.from_config({"providers": {"oai": profile}}, env={"K": "k-1"})
        rt = LlmRuntime()
        adapter.register(rt)
        return Agent(rt, await open_log("memory:"), "oai", "gpt-5.1", tools=tools)

    yield make
    for runner in runners:
        await runner.cleanup()


def _item(path: Path, kind: str) -> str:
    """The recorded item of type `kind` (its output_item.done), as JSON text."""
    for line in path.read_text().splitlines():
        if line.startswith("data:") and '"response.output_item.done"' in line:
            item = json.loads(line[5:])["item"]
            if item["type"] == kind:
                return json.dumps(item)
    raise AssertionError(f"no {kind} in {path.name}")


async def test_a_free_text_tool_runs_with_the_raw_input_and_answers_as_custom_output(
    agent_for: Any,
) -> None:
    seen: list[str] = []

    @tool(free_text=FreeText(grammar='start: "SELECT" /.+/'))
    def write_sql(query: str) -> str:
        """Run a read-only SQL query."""
        seen.append(query)
        return "3 rows"

    recording = RECORDINGS / "vercel-resp-custom-tool-handwritten.sse"
    server = Responses(recording.read_bytes(), FINAL)
    agent = await agent_for(server, [write_sql])
    result = await agent.run_turn("s1", "Users over 25?")
    assert result.reason.kind == "completed"
    assert seen == ["SELECT * FROM users WHERE age > 25"]
    first, second = server.seen
    assert first["tools"] == [
        {
            "type": "custom",
            "name": "write_sql",
            "description": "Run a read-only SQL query.",
            "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "SELECT" /.+/'},
        }
    ]
    call = next(i for i in second["input"] if i.get("type") == "custom_tool_call")
    assert json.dumps(call) == _item(recording, "custom_tool_call")  # sent back as it came
    output = next(i for i in second["input"] if i.get("type") == "custom_tool_call_output")
    assert output == {
        "type": "custom_tool_call_output",
        "call_id": "call_custom_sql_001",
        "output": "3 rows",
    }


async def test_apply_patch_calls_reach_the_users_tool_and_answer_as_patch_output(
    agent_for: Any,
) -> None:
    applied: list[tuple[str, str, int]] = []

    @tool(provider_tool="apply_patch")
    def apply_patch(type: str, path: str, diff: str = "") -> str:
        """Create, update or delete a file by a diff.

        Args:
            type: create_file, update_file or delete_file.
            path: The file, relative to the workspace.
            diff: The unified diff (none for a deletion).
        """
        applied.append((type, path, len(diff)))
        return f"{type} {path}: ok"

    recording = RECORDINGS / "vercel-resp-apply-patch.sse"
    server = Responses(recording.read_bytes(), FINAL)
    agent = await agent_for(server, [apply_patch])
    result = await agent.run_turn("s1", "Write a shopping checklist.")
    assert result.reason.kind == "completed"
    operation = json.loads(_item(recording, "apply_patch_call"))["operation"]
    assert applied == [(operation["type"], operation["path"], len(operation["diff"]))]
    first, second = server.seen
    assert first["tools"] == [{"type": "apply_patch"}]
    call = next(i for i in second["input"] if i.get("type") == "apply_patch_call")
    assert json.dumps(call) == _item(recording, "apply_patch_call")
    output = next(i for i in second["input"] if i.get("type") == "apply_patch_call_output")
    assert output == {
        "type": "apply_patch_call_output",
        "call_id": call["call_id"],
        "status": "completed",
        "output": f"{operation['type']} {operation['path']}: ok",
    }


async def test_local_shell_calls_reach_the_users_tool_and_a_failure_answers_its_output(
    agent_for: Any,
) -> None:
    @tool(provider_tool="local_shell")
    def local_shell(
        type: str,
        command: list[str],
        env: dict[str, str],
        timeout_ms: int | None = None,
        working_directory: str | None = None,
        user: str | None = None,
    ) -> str:
        """Run a command on this machine."""
        raise RuntimeError(f"refusing to run {' '.join(command)}")

    recording = RECORDINGS / "vercel-resp-local-shell.sse"
    server = Responses(recording.read_bytes(), FINAL)
    agent = await agent_for(server, [local_shell])
    result = await agent.run_turn("s1", "List my home directory.")
    assert result.reason.kind == "completed"
    first, second = server.seen
    assert first["tools"] == [{"type": "local_shell"}]
    call = next(i for i in second["input"] if i.get("type") == "local_shell_call")
    assert json.dumps(call) == _item(recording, "local_shell_call")
    output = next(i for i in second["input"] if i.get("type") == "local_shell_call_output")
    assert output["id"] == call["call_id"]
    assert "refusing to run ls -a ~" in output["output"]


def test_a_free_text_function_takes_exactly_one_str_parameter() -> None:
    def two(a: str, b: str) -> str:
        return a + b

    with pytest.raises(HarnessError) as info:
        tool(free_text=FreeText())(two)
    assert info.value.code == "INVALID_CONFIG" and "one str parameter" in info.value.message


def test_a_provider_tool_carries_its_own_name() -> None:
    def patcher(type: str, path: str) -> str:
        return path

    with pytest.raises(HarnessError) as info:
        tool(provider_tool="apply_patch")(patcher)
    assert info.value.code == "INVALID_CONFIG" and "'apply_patch'" in info.value.message
