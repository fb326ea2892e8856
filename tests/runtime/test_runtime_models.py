"""Exact-model metadata and call-config materialization: spec §11.12 SVC-27..47, 53..56 (R-RMI, R-RCC)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from runtime_helpers import CatalogAdapter, reasoning

from modelwire.errors import LlmError
from modelwire.runtime import LlmRuntime
from modelwire.vocab import (
    AdapterDefaults,
    CallConfig,
    ModelContext,
    ModelReasoningInfo,
    ReasoningEffortInfo,
    ResolvedModelInfo,
)

STANDARD = ReasoningEffortInfo("standard", "Standard")
ULTRA = ReasoningEffortInfo("ultra", "Ultra", "Largest budget")


def _resolved(**over: Any) -> ResolvedModelInfo:
    fields: dict[str, Any] = {"provider": "p", "id": "m", "name": "M", **over}
    return ResolvedModelInfo(**fields)


async def _code_of(rt: LlmRuntime, resolved: ResolvedModelInfo) -> str:
    rt.register_adapter(["p"], CatalogAdapter(resolved=resolved))
    with pytest.raises(LlmError) as caught:
        await rt.resolve_model_info("p", "m")
    assert '"p"' in caught.value.message and '"m"' in caught.value.message
    return caught.value.code


@pytest.mark.parametrize(
    "resolved",
    [
        pytest.param(_resolved(provider=1), id="svc_27_provider_not_string"),
        pytest.param(_resolved(provider="other"), id="svc_28_provider_mismatch"),
        pytest.param(_resolved(id=1), id="svc_29_id_not_string"),
        pytest.param(_resolved(id="other"), id="svc_30_id_mismatch"),
        pytest.param(_resolved(name=1), id="svc_31_name_not_string"),
        pytest.param(_resolved(name=""), id="svc_32_name_empty"),
        pytest.param(_resolved(description=1), id="svc_33_description_not_string"),
    ],
)
async def test_svc_27_33_invalid_model_identity(
    rt: LlmRuntime, resolved: ResolvedModelInfo
) -> None:
    assert await _code_of(rt, resolved) == "INVALID_MODEL_INFO"


async def test_svc_34_input_modalities_survive_resolution(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], CatalogAdapter(modalities={"m": ("text", "image")}))
    info = await rt.resolve_model_info("p", "m")
    assert info.input_modalities == ("text", "image")


async def test_svc_35_context_is_detached_and_unlisted_models_resolve(rt: LlmRuntime) -> None:
    contexts = {"unlisted": 32000}
    rt.register_adapter(["p"], CatalogAdapter(contexts=contexts))
    info = await rt.resolve_model_info("p", "unlisted")
    contexts["unlisted"] = 64000
    assert info.context == ModelContext(32000)
    assert (await rt.resolve_model_info("p", "other")).context is None


async def test_svc_36_reasoning_resolution_and_default_effort(rt: LlmRuntime) -> None:
    efforts = [STANDARD, ULTRA]
    offered = ModelReasoningInfo(efforts, "standard")  # type: ignore[arg-type]
    no_default = reasoning(STANDARD, ULTRA)
    rt.register_adapter(["p"], CatalogAdapter(reasoning={"m": offered, "nd": no_default}))
    info = await rt.resolve_model_info("p", "m")
    efforts.append(ReasoningEffortInfo("leaked", "Leaked"))
    assert info.reasoning == ModelReasoningInfo((STANDARD, ULTRA), "standard")
    assert await rt.resolve_call_config(CallConfig(provider="p", model="m")) == CallConfig(
        provider="p", model="m", reasoning_effort="standard"
    )
    explicit = CallConfig(provider="p", model="m", reasoning_effort="ultra")
    assert await rt.resolve_call_config(explicit) is explicit
    bare = CallConfig(provider="p", model="nd")
    assert await rt.resolve_call_config(bare) is bare


async def test_svc_37_default_max_tokens_materializes_and_is_marked(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], CatalogAdapter(default_max_tokens={"m": 256000}))
    assert (await rt.resolve_model_info("p", "m")).default_max_tokens == 256000
    config = CallConfig(provider="p", model="m")
    assert await rt.resolve_call_config(config) == CallConfig(
        provider="p", model="m", max_tokens=256000
    )
    prepared = await rt.prepare_call(config)
    assert prepared.adapter_defaults == AdapterDefaults(max_tokens=True)
    explicit = CallConfig(provider="p", model="m", max_tokens=8192)
    assert await rt.resolve_call_config(explicit) is explicit
    assert (await rt.prepare_call(explicit)).adapter_defaults == AdapterDefaults()


@pytest.mark.parametrize(
    "cap",
    [
        pytest.param(0, id="svc_38_zero"),
        pytest.param(1.5, id="svc_39_fractional"),
        pytest.param(2**53, id="svc_40_unsafe"),
    ],
)
async def test_svc_38_40_invalid_default_max_tokens(rt: LlmRuntime, cap: float) -> None:
    assert await _code_of(rt, _resolved(default_max_tokens=cap)) == "INVALID_MODEL_MAX_TOKENS"


@pytest.mark.parametrize(
    "info",
    [
        pytest.param(ModelReasoningInfo(()), id="svc_41_empty_efforts"),
        pytest.param(reasoning(ReasoningEffortInfo("", "Blank")), id="svc_42_effort_id_empty"),
        pytest.param(reasoning(ReasoningEffortInfo("x", "")), id="svc_43_effort_name_empty"),
        pytest.param(
            reasoning(ReasoningEffortInfo("x", "X", 1)),  # type: ignore[arg-type]
            id="svc_44_description_not_string",
        ),
        pytest.param(
            reasoning(ReasoningEffortInfo("same", "A"), ReasoningEffortInfo("same", "B")),
            id="svc_45_duplicate_effort",
        ),
        pytest.param(reasoning(STANDARD, default="other"), id="svc_46_default_not_offered"),
    ],
)
async def test_svc_41_46_invalid_reasoning(rt: LlmRuntime, info: ModelReasoningInfo) -> None:
    assert await _code_of(rt, _resolved(reasoning=info)) == "INVALID_MODEL_REASONING"


async def test_svc_47_unsupported_reasoning_effort(rt: LlmRuntime) -> None:
    rt.register_adapter(["p"], CatalogAdapter(reasoning={"ultra-only": reasoning(ULTRA)}))
    for model in ("ultra-only", "plain"):
        with pytest.raises(LlmError) as caught:
            await rt.resolve_call_config(
                CallConfig(provider="p", model=model, reasoning_effort="standard")
            )
        assert caught.value.code == "UNSUPPORTED_REASONING_EFFORT"
        assert "standard" in caught.value.message and model in caught.value.message


@pytest.mark.parametrize(
    "window",
    [
        pytest.param(0, id="svc_53_zero"),
        pytest.param(-1, id="svc_54_negative"),
        pytest.param(1.5, id="svc_55_fractional"),
        pytest.param(math.nan, id="svc_56_nan"),
    ],
)
async def test_svc_53_56_invalid_context_window(rt: LlmRuntime, window: float) -> None:
    resolved = _resolved(context=ModelContext(window))  # type: ignore[arg-type]
    assert await _code_of(rt, resolved) == "INVALID_MODEL_CONTEXT"


async def test_rmi_capture_happens_when_called_not_when_awaited(rt: LlmRuntime) -> None:
    """Spec §9 item 13: like a JS async method, the lookup binds the registration at call time."""
    reg = rt.register_adapter(["p"], CatalogAdapter(contexts={"m": 100}))
    pending = rt.resolve_model_info("p", "m")
    reg()
    assert (await pending).context == ModelContext(100)
