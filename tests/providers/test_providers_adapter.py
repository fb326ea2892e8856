"""The adapter over real loopback HTTP (catalogue §8.1, §8.2 #43-63, #101-102, §8.7)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from providers_fixtures import FIXTURES, TEXT_EVENTS, MockServer, Reply

from modelwire import LlmRuntime
from modelwire.adapters.providers import ProvidersAdapter
from modelwire.assembler import BlockAssembler
from modelwire.errors import LlmError
from modelwire.vocab import GenerateOptions, StreamChunk, TextBlock, user_message

USER_AGENT_PREFIX = "modelwire/"


def _acme(url: str, **fields: Any) -> dict[str, Any]:
    return {
        "providers": {
            "acme": {
                "api": "openai-completions",
                "base_url": url + "/v1",
                "api_key_env": "ACME_KEY",
                "models": [{"id": "m"}],
                **fields,
            }
        }
    }


def _opts(provider: str = "acme", model: str = "m", **kw: Any) -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=(user_message("hi"),), **kw)


async def _run(adapter: ProvidersAdapter, options: GenerateOptions) -> BlockAssembler:
    asm = BlockAssembler()
    async for chunk in adapter.stream(options):
        asm.push(chunk)
    return asm


async def _fails(adapter: ProvidersAdapter, options: GenerateOptions) -> LlmError:
    with pytest.raises(LlmError) as info:
        await _run(adapter, options)
    return info.value


async def test_mp_01_catalog_route_private_base_url() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"deepseek": {"base_url": server.url}}},
            env={"DEEPSEEK_API_KEY": "ambient-key"},
        )
        asm = await _run(adapter, _opts("deepseek", "deepseek-v4-flash"))
    assert asm.blocks() == [TextBlock("hello")]
    assert asm.finish.kind == "stop"
    assert asm.usage is not None and (asm.usage.input_tokens, asm.usage.output_tokens) == (3, 1)
    assert server.paths == ["/chat/completions"]
    assert server.headers[0]["authorization"] == "Bearer ambient-key"  # mp-27 ambient discovery


async def test_mp_02_profile_headers_and_attribution_wins() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, headers={"x-company": "acme", "User-Agent": "spoof"}),
            env={"ACME_KEY": "k"},
        )
        await _run(adapter, _opts())
    assert server.headers[0]["x-company"] == "acme"
    assert server.headers[0]["user-agent"].startswith(USER_AGENT_PREFIX)


async def test_mp_03_04_knobs_and_efforts_on_the_wire() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            {
                "providers": {
                    "deepseek": {
                        "base_url": server.url,
                        "reasoning": "max",
                        "cache_retention": "short",
                        "timeout_ms": 1000,
                        "stream_idle_timeout_ms": 5000,
                        "thinking_budgets": {"high": 100},
                    }
                }
            },
            env={"DEEPSEEK_API_KEY": "k"},
        )
        await _run(
            adapter,
            _opts("deepseek", "deepseek-v4-flash", temperature=0.2, max_tokens=77, session_id="s1"),
        )
        await _run(adapter, _opts("deepseek", "deepseek-v4-flash", reasoning_effort="high"))
        await _run(adapter, _opts("deepseek", "deepseek-v4-flash", reasoning_effort="off"))
        error = await _fails(
            adapter, _opts("deepseek", "deepseek-v4-flash", reasoning_effort="xhigh")
        )
    first, second, third = server.bodies
    assert first["model"] == "deepseek-v4-flash"
    assert (first["temperature"], first["max_completion_tokens"]) == (0.2, 77)
    assert (first["thinking"], first["reasoning_effort"]) == ({"type": "enabled"}, "max")
    assert second["reasoning_effort"] == "high"
    assert third["thinking"] == {"type": "disabled"} and "reasoning_effort" not in third
    assert error.code == "UNSUPPORTED_REASONING_EFFORT"
    assert len(server.paths) == 3


async def test_mp_06_provider_info() -> None:
    adapter = ProvidersAdapter.from_config(_acme("http://127.0.0.1:9", display_name="Acme GW"))
    assert adapter.provider_info("acme").name == "Acme GW"
    assert adapter.provider_info("gone").name == "gone"


async def test_mp_07_08_stop_option_and_unknown_model_before_io() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(_acme(server.url), env={"ACME_KEY": "k"})
        rt = LlmRuntime()  # the options contract is the runtime's (runtime.options_contract)
        rt.register_adapter(["acme"], adapter)
        refused = (await rt.generate(_opts(stop=("x",)))).failure
        assert refused is not None and refused.code == "UNSUPPORTED_OPTION"
        assert 'route "acme" cannot honour stop' in refused.message
        assert (await _fails(adapter, _opts(model="nope"))).code == "UNKNOWN_MODEL"
        assert (await _fails(adapter, _opts(provider="other"))).code == "NO_ADAPTER"
    assert server.paths == []


async def test_mp_09_openai_catalog_route_uses_responses() -> None:
    async with MockServer([Reply(status=401, body='{"error":{"message":"bad key"}}')]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"openai": {"base_url": server.url + "/v1"}}}, env={"OPENAI_API_KEY": "k"}
        )
        error = await _fails(adapter, _opts("openai", "gpt-4.1"))
    assert server.paths == ["/v1/responses"]
    assert error.code == "AUTH"


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "AUTH"), (400, "INVALID_REQUEST"), (429, "RATE_LIMIT"), (500, "SERVER")],
)
async def test_mp_13_http_status_maps_to_code(status: int, code: str) -> None:
    async with MockServer(
        [Reply(status=status, body='{"error":{"message":"nope"}}', headers={"retry-after-ms": "5"})]
    ) as server:
        adapter = ProvidersAdapter.from_config(_acme(server.url), env={"ACME_KEY": "k"})
        error = await _fails(adapter, _opts())
    assert error.code == code
    assert len(server.paths) == 1  # mp-11: no library retries


ERROR_FIXTURES = (
    sorted((FIXTURES / "errors").glob("*.http.json")) if (FIXTURES / "errors").is_dir() else []
)
CATEGORY_CODES = {
    "rate_limit": "RATE_LIMIT",
    "quota": "QUOTA",
    "context_length": "CONTEXT_WINDOW_EXCEEDED",
    "auth": "AUTH",
    "not_found": "MODEL_NOT_FOUND",
    "invalid_request": "INVALID_REQUEST",
    "server": "SERVER",
    "overloaded": "SERVER",
}


@pytest.mark.parametrize("path", ERROR_FIXTURES, ids=[p.name.split(".")[0] for p in ERROR_FIXTURES])
async def test_error_fixture_maps_to_category_code(path: Any) -> None:
    http = json.loads(path.read_text())
    expected_path = path.with_name(path.name.replace(".http.json", ".expected.json"))
    expected = json.loads(expected_path.read_text())
    api = "anthropic-messages" if path.name.startswith("anthropic") else "openai-completions"
    skip = ("content-length", "content-type", "transfer-encoding", "content-encoding", "connection")
    headers = {
        k: ", ".join(v) if isinstance(v, list) else v
        for k, v in http["headers"].items()
        if k.lower() not in skip
    }
    async with MockServer(
        [Reply(status=http["status"], body=http["body"], headers=headers)]
    ) as server:
        adapter = ProvidersAdapter.from_config(_acme(server.url, api=api), env={"ACME_KEY": "k"})
        error = await _fails(adapter, _opts())
    assert error.code == CATEGORY_CODES[expected["category"]]
    assert error.status == http["status"]
    assert "k" not in error.message.split()


async def test_mp_14_usage_overflow_beats_empty_response() -> None:
    window = 1000000
    events = [
        b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
        f'data: {{"id":"c","choices":[],"usage":{{"prompt_tokens":{window + 1},"completion_tokens":0}}}}\n\n'.encode(),
        b"data: [DONE]\n\n",
    ]
    async with MockServer([Reply(reads=events)]) as server:
        adapter = ProvidersAdapter.from_config(
            {"providers": {"deepseek": {"base_url": server.url}}}, env={"DEEPSEEK_API_KEY": "k"}
        )
        asm = await _run(adapter, _opts("deepseek", "deepseek-v4-flash"))
    assert asm.finish.kind == "error"
    assert asm.finish.failure.code == "CONTEXT_WINDOW_EXCEEDED"  # type: ignore[union-attr]
    assert (
        asm.finish.failure.message
        == 'pi-ai detected context overflow for model "deepseek-v4-flash"'
    )  # type: ignore[union-attr]


async def test_mp_15_idle_watchdog_times_out_and_closes() -> None:
    # 200 ms of silence ends the call; the server's head comes at once and its first event only
    # after 2 s (a budget of 20 ms once fired before a loaded machine had even sent the request)
    async with MockServer([Reply(reads=TEXT_EVENTS, delay=2.0)]) as server:
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, stream_idle_timeout_ms=200), env={"ACME_KEY": "k"}
        )
        error = await _fails(adapter, _opts())
        await asyncio.sleep(0.3)
    assert error.code == "TIMEOUT" and "idle timeout after 200ms" in error.message
    assert len(server.paths) == 1


async def test_mp_28_29_api_key_env_exact_and_missing() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        adapter = ProvidersAdapter.from_config(
            _acme(server.url), env={"ACME_KEY": "custom-ref-key"}
        )
        await _run(adapter, _opts())
        missing = ProvidersAdapter.from_config(
            {"providers": {"deepseek": {"base_url": server.url, "api_key_env": "EMPTY_REF"}}},
            env={"EMPTY_REF": "", "DEEPSEEK_API_KEY": "unrelated-ambient"},
        )
        for _ in range(2):
            error = await _fails(missing, _opts("deepseek", "deepseek-v4-flash"))
            assert error.code == "MISSING_CREDENTIAL"
            assert 'provider route "deepseek"' in error.message and "EMPTY_REF" in error.message
            assert "unrelated-ambient" not in error.message
    assert server.headers[0]["authorization"] == "Bearer custom-ref-key"
    assert len(server.paths) == 1


async def test_invalid_credential_never_echoes_key() -> None:
    adapter = ProvidersAdapter.from_config(
        _acme("http://127.0.0.1:9"), env={"ACME_KEY": "sk-sëcret"}
    )
    error = await _fails(adapter, _opts())
    assert error.code == "INVALID_CREDENTIAL" and "sëcret" not in error.message


async def test_mp_55_56_declared_route_needs_key_or_auth_header() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        bare = {
            "api": "openai-completions",
            "base_url": server.url + "/v1",
            "models": [{"id": "m"}],
        }
        keyless = ProvidersAdapter.from_config({"providers": {"local-llm": bare}}, env={})
        error = await _fails(keyless, _opts("local-llm"))
        assert error.message == "No API key for provider: local-llm"
        with_header = ProvidersAdapter.from_config(
            {"providers": {"local-llm": {**bare, "headers": {"Authorization": "Bearer local"}}}},
            env={},
        )
        await _run(with_header, _opts("local-llm"))
    assert server.headers[0]["authorization"] == "Bearer local"


async def test_mp_24_developer_role_switch_per_model() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        models = [
            {
                "id": "a",
                "reasoning_efforts": {"high": "high"},
                "compat": {"supports_developer_role": False},
            },
            {"id": "b", "reasoning_efforts": {"high": "high"}},
        ]
        adapter = ProvidersAdapter.from_config(
            _acme(server.url, models=models), env={"ACME_KEY": "k"}
        )
        await _run(adapter, _opts(model="a", system="be brief"))
        await _run(adapter, _opts(model="b", system="be brief"))
    assert [b["messages"][0]["role"] for b in server.bodies] == ["system", "developer"]


async def test_mp_22_25_26_declared_wire_spellings() -> None:
    async with MockServer([Reply(reads=TEXT_EVENTS)]) as server:
        efforts = {"off": "none", "high": "ultra"}
        adapter = ProvidersAdapter.from_config(
            _acme(
                server.url,
                models=[
                    {"id": "m", "reasoning_efforts": efforts},
                    {
                        "id": "q",
                        "reasoning_efforts": efforts,
                        "compat": {"supports_reasoning_effort": False},
                    },
                ],
            ),
            env={"ACME_KEY": "k"},
        )
        await _run(adapter, _opts(reasoning_effort="high"))
        await _run(adapter, _opts(reasoning_effort="off"))
        await _run(adapter, _opts(model="q", reasoning_effort="high"))
        assert (
            await _fails(adapter, _opts(reasoning_effort="max"))
        ).code == "UNSUPPORTED_REASONING_EFFORT"
    assert [b.get("reasoning_effort") for b in server.bodies] == ["ultra", "none", None]


async def test_mp_20_21_describe_efforts_and_defaults() -> None:
    adapter = ProvidersAdapter.from_config(
        {
            "providers": {
                "deepseek": {"reasoning": "max"},
                "acme": {
                    **_acme("http://h")["providers"]["acme"],
                    "reasoning": "high",
                    "models": [
                        {
                            "id": "m",
                            "max_tokens": 4096,
                            "reasoning_efforts": {"off": None, "low": "low", "high": "high"},
                        }
                    ],
                },
            }
        }
    )
    flash = await adapter.resolve_model("deepseek", "deepseek-v4-flash")
    assert flash.reasoning is not None and flash.reasoning.default_effort == "max"
    assert [e.name for e in flash.reasoning.efforts] == ["Off", "High", "Max"]
    acme = await adapter.resolve_model("acme", "m")
    assert acme.reasoning is not None and acme.reasoning.default_effort == "high"
    assert [e.id for e in acme.reasoning.efforts] == ["off", "low", "high"]
    assert acme.default_max_tokens == 4096
    gpt = ProvidersAdapter.from_config({"providers": {"openai": {}}})
    assert (await gpt.resolve_model("openai", "gpt-4.1")).reasoning is None
    listed = await gpt.list_models("openai")
    assert any(
        m.id == "gpt-4.1" and m.name == "GPT-4.1" and m.input_modalities == ("text", "image")
        for m in listed
    )
    with pytest.raises(LlmError) as info:
        await gpt.list_models("acme")
    assert info.value.code == "NO_ADAPTER"


async def test_mp_35_image_to_text_only_model_refused_before_io() -> None:
    from modelwire.vocab import ImageAttachmentRef, ImageBlock, ToolResultBlock

    image = ImageBlock(ImageAttachmentRef("a1", "image/png", 3, 1, 1))
    nested = ToolResultBlock("c1", (ToolResultBlock("c2", (image,)),))
    adapter = ProvidersAdapter.from_config(_acme("http://127.0.0.1:9"), env={"ACME_KEY": "k"})
    options = GenerateOptions(provider="acme", model="m", messages=(user_message([nested]),))
    assert (await _fails(adapter, options)).code == "UNSUPPORTED_CONTENT"


async def test_mp_101_102_snapshot_survives_config_change_mid_request() -> None:
    async with (
        MockServer([Reply(reads=TEXT_EVENTS)]) as old,
        MockServer([Reply(reads=TEXT_EVENTS)]) as new,
    ):
        adapter = ProvidersAdapter.from_config(_acme(old.url), env={"ACME_KEY": "k"})
        stream = adapter.stream(_opts())
        first = await stream.__anext__()  # snapshot captured, request in flight
        adapter.update_config(_acme(new.url))
        rest: list[StreamChunk] = [first] + [c async for c in stream]
        assert rest[-1].reason.kind == "stop"  # type: ignore[union-attr]
        await _run(adapter, _opts())
    assert (len(old.paths), len(new.paths)) == (1, 1)


async def test_mp_17_185_188_191_register_and_update_config() -> None:
    runtime = LlmRuntime()
    adapter = ProvidersAdapter.from_config(None)
    assert adapter.register(runtime) is None  # dormant
    assert any(
        e.provider == "openai" and e.declared is False
        for e in runtime.list_configurable_providers()
    )
    cfg = {"providers": {"openai": {}, "anthropic": {}}}
    assert adapter.update_config(cfg) is True
    assert [p.id for p in runtime.list_providers()] == ["openai", "anthropic"]  # config order
    assert adapter.update_config({"providers": {"anthropic": {}, "openai": {}}}) is False  # reorder
    always = {"mode": "always"}
    assert (
        adapter.update_config({"providers": {"openai": {"retry_policy": always}, "anthropic": {}}})
        is True
    )
    assert runtime.provider_retry_policy("openai").mode == "always"
    from modelwire.errors import HarnessError

    with pytest.raises(HarnessError, match="resolves no models"):
        adapter.update_config({"providers": {"not-a-real-provider": {}}})
    assert sorted(p.id for p in runtime.list_providers()) == ["anthropic", "openai"]


async def test_a_prepared_call_keeps_the_config_generation_it_was_prepared_against() -> None:
    """Issue case: prepare with effort "high" against config A, `update_config` to a config B
    that offers no efforts, then dispatch: the call is served by generation A (its effort is
    sent), not refused with UNSUPPORTED_REASONING_EFFORT."""
    from modelwire import CallConfig, LlmRuntime
    from modelwire.vocab import Finish, Stop

    async with MockServer([Reply(reads=list(TEXT_EVENTS))]) as server:
        thinking = [{"id": "m", "reasoning_efforts": {"high": "high"}}]
        cfg_a = _acme(server.url, models=thinking)
        cfg_b = _acme(server.url)  # model "m" without reasoning
        adapter = ProvidersAdapter.from_config(cfg_a, env={"ACME_KEY": "k"})
        rt = LlmRuntime()
        adapter.register(rt)
        prepared = await rt.prepare_call(CallConfig("acme", "m", reasoning_effort="high"))
        before = adapter.snapshot
        adapter.update_config(cfg_b)
        assert adapter.snapshot is not before  # the swap landed between prepare and dispatch
        chunks = [c async for c in prepared.stream(_opts(reasoning_effort="high"))]
        assert chunks[-1] == Finish(Stop(), chunks[-1].replay_state)  # type: ignore[union-attr]
        assert server.bodies[-1]["reasoning_effort"] == "high"
        fresh = [c async for c in rt.stream(_opts(reasoning_effort="high"))]  # generation B now
    assert isinstance(fresh[-1], Finish) and fresh[-1].reason.kind == "error"
