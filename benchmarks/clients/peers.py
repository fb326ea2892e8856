"""The peers, as their users would call them (installed only in benchmarks/.venv-peers).

Each class imports its library when it is instantiated, so a missing peer is reported as
"not available" instead of failing the run, and no peer's import cost leaks into another's
process. Every peer is pointed at the same local server with retries off.
"""

from __future__ import annotations

import importlib.metadata
import os
from typing import Any

from .common import (
    API_KEY,
    CHAT_TOOLS,
    MODEL,
    PROMPT,
    TOOL_DESCRIPTION,
    TOOL_SCHEMA,
    Client,
    Result,
    ToolAcc,
    Unavailable,
)

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import


def _version(dist: str) -> str:
    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return dist


def _need(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Unavailable(f"{module} is not installed ({exc})") from exc


def _chat_result(content: list[str], reasoning: list[str], acc: ToolAcc) -> Result:
    return Result("".join(content), "".join(reasoning), acc.done())


class OpenAIChat(Client):
    """Official `openai` SDK: `chat.completions.create(stream=True)`, iterate the chunks."""

    name = "openai SDK chat.completions (stream=True)"
    proto = "chat"

    def __init__(self) -> None:
        self.openai = _need("openai")

    def version(self) -> str:
        return _version("openai")

    async def setup(self, base_url: str) -> None:
        self.client = self.openai.AsyncOpenAI(
            base_url=base_url + "/v1", api_key=API_KEY, max_retries=0, timeout=600.0
        )

    async def stream(self, tools: bool) -> Result:
        kw: dict[str, Any] = {"tools": CHAT_TOOLS} if tools else {}
        s = await self.client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
            **kw,
        )
        content: list[str] = []
        reasoning: list[str] = []
        acc = ToolAcc()
        async for chunk in s:
            for ch in chunk.choices:
                d = ch.delta
                if d.content:
                    content.append(d.content)
                r = getattr(d, "reasoning_content", None)  # DeepSeek's extra field
                if r:
                    reasoning.append(r)
                if d.tool_calls:
                    for tc in d.tool_calls:
                        f = tc.function
                        acc.add(tc.index, tc.id, f and f.name, f and f.arguments)
        return _chat_result(content, reasoning, acc)

    async def close(self) -> None:
        await self.client.close()


class OpenAIResponses(OpenAIChat):
    """Official `openai` SDK: `responses.create(stream=True)`, iterate the events."""

    name = "openai SDK responses (stream=True)"
    proto = "responses"

    async def stream(self, tools: bool) -> Result:
        kw: dict[str, Any] = {}
        if tools:
            kw["tools"] = [{"type": "function", "name": "get_weather", "parameters": TOOL_SCHEMA}]
        s = await self.client.responses.create(model=MODEL, input=PROMPT, stream=True, **kw)
        text: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, list[Any]] = {}
        async for ev in s:
            t = ev.type
            if t == "response.output_text.delta":
                text.append(ev.delta)
            elif t == "response.reasoning_text.delta":
                reasoning.append(ev.delta)
            elif t == "response.function_call_arguments.delta":
                calls[ev.output_index][2].append(ev.delta)
            elif t == "response.output_item.added" and ev.item.type == "function_call":
                calls[ev.output_index] = [ev.item.call_id, ev.item.name, []]
        tcs = [
            {"id": c[0], "name": c[1], "arguments": "".join(c[2])} for _, c in sorted(calls.items())
        ]
        return Result("".join(text), "".join(reasoning), tcs)


class LiteLLMDeepSeek(Client):
    """LiteLLM `acompletion(model="deepseek/...", api_base=<server>, stream=True)`."""

    name = "LiteLLM acompletion deepseek/ (stream=True)"
    proto = "chat"
    prefix = "deepseek/"
    model = MODEL

    def __init__(self) -> None:
        self.litellm = _need("litellm")
        self.litellm.suppress_debug_info = True

    def version(self) -> str:
        return _version("litellm")

    async def setup(self, base_url: str) -> None:
        self.base = base_url + "/v1"

    async def stream(self, tools: bool) -> Result:
        kw: dict[str, Any] = {"tools": CHAT_TOOLS} if tools else {}
        resp = await self.litellm.acompletion(
            model=self.prefix + self.model,
            api_base=self.base,
            api_key=API_KEY,
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
            max_retries=0,
            num_retries=0,
            **kw,
        )
        content: list[str] = []
        reasoning: list[str] = []
        acc = ToolAcc()
        async for chunk in resp:
            for ch in chunk.choices:
                d = ch.delta
                if d.content:
                    content.append(d.content)
                r = getattr(d, "reasoning_content", None)
                if r:
                    reasoning.append(r)
                if d.tool_calls:
                    for tc in d.tool_calls:
                        f = tc.function
                        acc.add(tc.index, tc.id, f and f.name, f and f.arguments)
        return _chat_result(content, reasoning, acc)


class LiteLLMAnthropic(LiteLLMDeepSeek):
    """LiteLLM `acompletion(model="anthropic/...", api_base=<server>, stream=True)`."""

    name = "LiteLLM acompletion anthropic/ (stream=True)"
    proto = "anthropic"
    prefix = "anthropic/"
    model = "claude-sonnet-4-5"

    async def setup(self, base_url: str) -> None:
        self.base = base_url


class PydanticAIDirect(Client):
    """pydantic-ai `direct.model_request_stream` on an `OpenAIChatModel` (every event consumed)."""

    name = "pydantic-ai direct.model_request_stream"
    proto = "chat"

    def __init__(self) -> None:
        self.pai = _need("pydantic_ai")
        self.direct = _need("pydantic_ai.direct")
        self.messages = _need("pydantic_ai.messages")
        self.models = _need("pydantic_ai.models")
        self.openai_model = _need("pydantic_ai.models.openai")
        self.provider = _need("pydantic_ai.providers.openai")
        self.tools_mod = _need("pydantic_ai.tools")

    def version(self) -> str:
        return _version("pydantic-ai-slim")

    async def setup(self, base_url: str) -> None:
        prov = self.provider.OpenAIProvider(base_url=base_url + "/v1", api_key=API_KEY)
        self.model = self.openai_model.OpenAIChatModel(MODEL, provider=prov)

    async def stream(self, tools: bool) -> Result:
        mrp = self.models.ModelRequestParameters
        if tools:
            td = self.tools_mod.ToolDefinition(
                name="get_weather",
                parameters_json_schema=TOOL_SCHEMA,
                description=TOOL_DESCRIPTION,
            )
            params = mrp(function_tools=[td])
        else:
            params = mrp()
        msgs = [self.pai.ModelRequest.user_text_prompt(PROMPT)]
        async with self.direct.model_request_stream(
            self.model, msgs, model_request_parameters=params
        ) as s:
            async for _event in s:
                pass
            resp = s.get()
        m = self.messages
        content: list[str] = []
        reasoning: list[str] = []
        tcs: list[dict[str, str]] = []
        for p in resp.parts:
            if isinstance(p, m.TextPart):
                content.append(p.content)
            elif isinstance(p, m.ThinkingPart):
                reasoning.append(p.content)
            elif isinstance(p, m.ToolCallPart):
                tcs.append(
                    {"id": p.tool_call_id, "name": p.tool_name, "arguments": p.args_as_json_str()}
                )
        return Result("".join(content), "".join(reasoning), tcs)

    async def close(self) -> None:
        await self.model.client.close()


class PydanticAIAgent(PydanticAIDirect):
    """pydantic-ai `Agent.run_stream` + `stream_text(delta=True)`; text-only (an Agent would run
    the tool and call the model again)."""

    name = "pydantic-ai Agent.run_stream"
    tools = False

    async def setup(self, base_url: str) -> None:
        await super().setup(base_url)
        self.agent = self.pai.Agent(self.model)

    async def stream(self, tools: bool) -> Result:
        content: list[str] = []
        async with self.agent.run_stream(PROMPT) as run:
            async for delta in run.stream_text(delta=True, debounce_by=None):
                content.append(delta)
            msgs = run.all_messages()
        m = self.messages
        reasoning = [
            p.content
            for msg in msgs
            if isinstance(msg, m.ModelResponse)
            for p in msg.parts
            if isinstance(p, m.ThinkingPart)
        ]
        return Result("".join(content), "".join(reasoning), [])
