"""The real `openai` and `anthropic` SDKs as clients of a running gateway, against scripted
loopback upstreams: every model endpoint streaming and not, tools, usage, cross-protocol."""

from __future__ import annotations

import json

import anthropic
import openai
from serve_helpers import (
    ADMIN,
    MockServer,
    anthropic_text,
    anthropic_tool,
    chat_text,
    chat_tool,
    config,
    gateway,
)

from modelwire.serve.handlers import GATEWAY


def _openai(url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=ADMIN, max_retries=0)


def _anthropic(url: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=url, api_key=ADMIN, max_retries=0)


async def test_chat_completions_whole_answer_through_the_openai_sdk() -> None:
    async with MockServer([chat_text("hel", "lo")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (app, url):
            reply = await _openai(url).chat.completions.create(
                model="oa:m",
                messages=[
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                ],
            )
            assert reply.choices[0].message.content == "hello"
            assert reply.choices[0].finish_reason == "stop"
            assert reply.usage is not None
            assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (7, 3)
            assert reply.model == "oa:m"
            sent = up.bodies[0]
            assert sent["model"] == "m" and sent["messages"][0]["content"] == "be brief"
            assert up.headers[0]["authorization"] == "Bearer sk-upstream-openai-secret-1234"
            log = app[GATEWAY].log
            sessions = await log.sessions()
            assert len(sessions) == 1
            types = [e.type for e in await log.read(sessions[0].session_id)]
            assert types[0] == "turn/start" and types[-1] == "turn/end"
            assert "gateway/request" in types and "assistant/message" in types


async def test_chat_completions_stream_with_usage_through_the_openai_sdk() -> None:
    async with (
        MockServer([chat_text("a", "b", "c")]) as up,
        MockServer([anthropic_text("x")]) as an,
    ):
        async with gateway(config(up.url, an.url)) as (_, url):
            stream = await _openai(url).chat.completions.create(
                model="oa:m",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            text, finish, usage = "", None, None
            async for chunk in stream:
                if chunk.choices:
                    text += chunk.choices[0].delta.content or ""
                    finish = chunk.choices[0].finish_reason or finish
                if chunk.usage is not None:
                    usage = chunk.usage
            assert (text, finish) == ("abc", "stop")
            assert usage is not None and usage.total_tokens == 10


async def test_chat_completions_tools_round_trip_through_the_openai_sdk() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "the weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    replies = [chat_tool("call_1", "weather", '{"city":"Oslo"}'), chat_text("sunny")]
    async with MockServer(replies) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url)) as (_, url):
            client = _openai(url)
            async with client.chat.completions.stream(
                model="oa:m",
                messages=[{"role": "user", "content": "weather in Oslo?"}],
                tools=tools,  # type: ignore[arg-type]
                tool_choice="required",
            ) as stream:
                final = await stream.get_final_completion()
            call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
            assert (call.id, call.function.name) == ("call_1", "weather")
            assert json.loads(call.function.arguments) == {"city": "Oslo"}
            assert final.choices[0].finish_reason == "tool_calls"
            assert up.bodies[0]["tool_choice"] == "required"
            reply = await client.chat.completions.create(
                model="oa:m",
                messages=[
                    {"role": "user", "content": "weather in Oslo?"},
                    {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},  # type: ignore[list-item]
                    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 20C"},
                ],
                tools=tools,  # type: ignore[arg-type]
            )
            assert reply.choices[0].message.content == "sunny"
            sent = up.bodies[1]["messages"]
            assert sent[1]["tool_calls"][0]["function"]["name"] == "weather"
            assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 20C"}


async def test_messages_whole_and_streamed_through_the_anthropic_sdk() -> None:
    replies = [anthropic_text("hi ", "there"), anthropic_text("more", thinking="let me think")]
    async with MockServer([chat_text("x")]) as up, MockServer(replies) as an:
        async with gateway(config(up.url, an.url)) as (_, url):
            client = _anthropic(url)
            message = await client.messages.create(
                model="an:claude-x",
                max_tokens=100,
                system="terse",
                messages=[{"role": "user", "content": "hi"}],
            )
            assert message.content[0].type == "text" and message.content[0].text == "hi there"
            assert message.stop_reason == "end_turn"
            assert message.usage.input_tokens == 11 and message.usage.output_tokens == 5
            assert an.bodies[0]["system"][0]["text"] == "terse" or an.bodies[0]["system"] == "terse"
            async with client.messages.stream(
                model="an:claude-x",
                max_tokens=4000,
                thinking={"type": "enabled", "budget_tokens": 2000},
                messages=[{"role": "user", "content": "think"}],
            ) as stream:
                texts = [t async for t in stream.text_stream]
                final = await stream.get_final_message()
            assert "".join(texts) == "more"
            thinking = final.content[0]
            assert thinking.type == "thinking" and thinking.thinking == "let me think"
            assert thinking.signature.startswith("mwr1.")
            # the thinking block goes back with its minted signature: the upstream gets its own
            replies_again = [anthropic_text("ok")]
            an.replies = replies_again
            await client.messages.create(
                model="an:claude-x",
                max_tokens=4000,
                thinking={"type": "enabled", "budget_tokens": 2000},
                messages=[
                    {"role": "user", "content": "think"},
                    {"role": "assistant", "content": [b.model_dump() for b in final.content]},  # type: ignore[misc]
                    {"role": "user", "content": "again"},
                ],
            )
            sent = an.bodies[-1]["messages"][1]["content"]
            assert sent[0]["type"] == "thinking" and sent[0]["signature"] == "sig-upstream-1"


async def test_an_openai_request_served_by_an_anthropic_route_and_back() -> None:
    async with (
        MockServer([chat_tool("call_9", "f", '{"a":1}')]) as up,
        MockServer([anthropic_tool("toolu_1", "f", '{"a":1}')]) as an,
    ):
        async with gateway(config(up.url, an.url)) as (_, url):
            tools = [
                {
                    "type": "function",
                    "function": {"name": "f", "description": "", "parameters": {"type": "object"}},
                }
            ]
            reply = await _openai(url).chat.completions.create(
                model="an:claude-x",
                messages=[{"role": "user", "content": "call f"}],
                tools=tools,  # type: ignore[arg-type]
            )
            call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
            assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
                "toolu_1",
                "f",
                {"a": 1},
            )
            assert an.bodies[0]["tools"][0]["name"] == "f"
            message = await _anthropic(url).messages.create(
                model="oa:m",
                max_tokens=50,
                tools=[{"name": "f", "description": "", "input_schema": {"type": "object"}}],
                messages=[{"role": "user", "content": "call f"}],
            )
            block = message.content[0]
            assert block.type == "tool_use" and block.id == "call_9" and block.input == {"a": 1}
            assert message.stop_reason == "tool_use"
            assert up.bodies[0]["tools"][0]["function"]["name"] == "f"


async def test_models_and_healthz() -> None:
    async with MockServer([chat_text("x")]) as up, MockServer([anthropic_text("x")]) as an:
        async with gateway(config(up.url, an.url, models={"fast": "oa:m"})) as (_, url):
            listed = await _openai(url).models.list()
            ids = [m.id for m in listed.data]
            assert ids[0] == "fast" and "oa:m" in ids and "an:claude-x" in ids
            page = await _anthropic(url).models.list()
            assert [m.id for m in page.data] == ids
            import aiohttp

            async with aiohttp.ClientSession() as http, http.get(url + "/healthz") as resp:
                assert resp.status == 200 and (await resp.json()) == {"status": "ok"}


async def test_streamed_tool_calls_cross_protocol_in_both_directions() -> None:
    async with (
        MockServer([chat_tool("call_5", "lookup", '{"q":"x"}')]) as up,
        MockServer([anthropic_text("sure", thinking="hmm")]) as an,
    ):
        async with gateway(config(up.url, an.url)) as (_, url):
            async with _anthropic(url).messages.stream(
                model="oa:m",
                max_tokens=50,
                tools=[{"name": "lookup", "description": "", "input_schema": {"type": "object"}}],
                messages=[{"role": "user", "content": "look it up"}],
            ) as stream:
                final = await stream.get_final_message()
            block = final.content[0]
            assert block.type == "tool_use" and block.name == "lookup" and block.input == {"q": "x"}
            assert final.stop_reason == "tool_use" and final.usage.output_tokens == 9
            stream_chat = await _openai(url).chat.completions.create(
                model="an:claude-x",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
                reasoning_effort="low",
            )
            reasoning, text = "", ""
            async for chunk in stream_chat:
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is not None:
                    reasoning += getattr(delta, "reasoning_content", None) or ""
                    text += delta.content or ""
            assert (reasoning, text) == ("hmm", "sure")
            assert an.bodies[0]["thinking"]["type"] in ("enabled", "adaptive")
