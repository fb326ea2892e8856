"""G.12 cases 70–73 (per-session cursors) and 74–83 (configuration, `from_config`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from replay_helpers import (
    ROUTE,
    chunk_json,
    collect,
    options,
    record,
    text_chunks,
    turn,
    write_json,
)

import modelwire.adapters.replay as replay_module
from modelwire.adapters.replay import ENV_CHILD_FILES, ENV_FILE, ENV_OVERRIDE, ReplayAdapter
from modelwire.errors import ErrorCode, HarnessError
from modelwire.runtime import LlmRuntime
from modelwire.vocab import Finish, TextDelta


async def _export(tmp_path: Path, name: str, *texts: str, created: int = 0) -> Path:
    datas = []
    for number, text in enumerate(texts, start=1):
        datas += turn(f"q{number}", [text_chunks(text)], number=number)
    return await record(datas, tmp_path / f"{name}.jsonl", name)


def _runtime(adapter: ReplayAdapter) -> LlmRuntime:
    runtime = LlmRuntime()
    runtime.register_adapter([ROUTE, "acme-alt"], adapter)
    return runtime


async def _answer(runtime: LlmRuntime, session_id: str | None) -> str:
    chunks = await collect(runtime.stream(options(session_id=session_id)))
    texts = [c.text for c in chunks if isinstance(c, TextDelta)]
    if texts:
        return "".join(texts)
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    return finish.reason.failure.code


# ---- per-session keying (70–73) ---------------------------------------------------------------


async def test_replay_70_first_live_session_binds_the_parent_second_the_child(
    tmp_path: Path,
) -> None:
    parent = await _export(tmp_path, "parent", "p1")
    child = await _export(tmp_path, "child", "c1")
    runtime = _runtime(ReplayAdapter.from_file(parent, children=[child]))
    assert await _answer(runtime, "live-a") == "p1"
    assert await _answer(runtime, "live-b") == "c1"
    assert await _answer(runtime, "live-a") == ErrorCode.REPLAY_EXHAUSTED


async def test_replay_71_cursors_are_independent_under_interleaving(tmp_path: Path) -> None:
    parent = await _export(tmp_path, "parent", "p1", "p2")
    child = await _export(tmp_path, "child", "c1", "c2")
    runtime = _runtime(ReplayAdapter.from_file(parent, children=[child]))
    order = ["a", "b", "b", "a"]
    assert [await _answer(runtime, key) for key in order] == ["p1", "c1", "c2", "p2"]


async def test_replay_72_calls_without_a_session_id_use_the_anonymous_primary_binding(
    tmp_path: Path,
) -> None:
    parent = await _export(tmp_path, "parent", "p1", "p2")
    adapter = ReplayAdapter.from_file(parent)
    runtime = _runtime(adapter)
    assert [await _answer(runtime, None), await _answer(runtime, None)] == ["p1", "p2"]
    adapter.assert_consumed()


async def test_replay_73_more_live_sessions_than_recorded_is_an_unrecorded_session(
    tmp_path: Path,
) -> None:
    adapter = ReplayAdapter.from_file(await _export(tmp_path, "parent", "p1", "p2"))
    runtime = _runtime(adapter)
    assert await _answer(runtime, "a") == "p1"
    chunks = await collect(runtime.stream(options(session_id="b")))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure.code == ErrorCode.REPLAY_UNRECORDED_SESSION
    assert "unrecorded session (#2, session 'b')" in finish.reason.failure.message
    assert "recorded only 1 session(s)" in finish.reason.failure.message
    assert await _answer(runtime, "a") == "p2"  # the unrecorded key bound nothing


# ---- configuration (74–83) --------------------------------------------------------------------


def test_replay_74_module_exports_its_public_names_and_is_not_loaded_by_modelwire() -> None:
    assert "ReplayAdapter" in replay_module.__all__
    for name in replay_module.__all__:
        assert getattr(replay_module, name) is not None
    probe = "import sys, modelwire; print('modelwire.adapters.replay' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_replay_75_explicit_config_installs_the_catalog_and_streams_paced(
    tmp_path: Path,
) -> None:
    path = await _export(tmp_path, "rec", "hello")
    adapter = ReplayAdapter.from_config(
        {
            "file": str(path),
            "pace_ms": 5,
            "providers": {"shop": {"models": [{"id": "m", "context_window": 4096}]}},
        },
        env={},
    )
    runtime = LlmRuntime()
    adapter.register(runtime)
    assert [p.id for p in runtime.list_providers()] == ["shop"]
    info = await runtime.resolve_model_info("shop", "m")
    assert info.context is not None and info.context.context_window == 4096
    chunks = await collect(runtime.stream(options(provider="shop", model="m")))
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ["hello"]


@pytest.mark.parametrize(
    "modalities", ["text", ["text", "audio"]], ids=["a-string", "unknown-modality"]
)
def test_replay_76_invalid_input_modalities_are_rejected_at_load(modalities: object) -> None:
    providers = {"shop": {"models": [{"id": "m", "input_modalities": modalities}]}}
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter([], providers=providers)
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    assert caught.value.message == (
        'replay: provider "shop" model "m" input_modalities must be an array containing only '
        '"text" and "image"'
    )


async def test_replay_77_falls_back_to_the_environment_file_and_override(tmp_path: Path) -> None:
    path = await _export(tmp_path, "rec", "from-file")
    sidecar = write_json(
        tmp_path / "custom.json",
        [{"kind": "chunks", "chunks": [chunk_json(c) for c in text_chunks("from-override")]}],
    )
    only_file = ReplayAdapter.from_config(None, env={ENV_FILE: str(path)})
    assert await _answer(_runtime(only_file), "s") == "from-file"
    both = ReplayAdapter.from_config({}, env={ENV_FILE: str(path), ENV_OVERRIDE: str(sidecar)})
    assert await _answer(_runtime(both), "s") == "from-override"


async def test_replay_78_uses_only_the_file_when_no_override_is_configured(
    tmp_path: Path,
) -> None:
    path = await _export(tmp_path, "rec", "one", "two")
    adapter = ReplayAdapter.from_config({"file": str(path)}, env={})
    assert len(adapter.scripts) == 1 and len(adapter.scripts[0].calls) == 2
    assert all(call.request is not None for call in adapter.scripts[0].calls)


def test_replay_79_no_fixture_path_anywhere_is_an_error() -> None:
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_config({}, env={})
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    assert "a fixture path is required" in caught.value.message


def test_replay_80_an_empty_file_path_counts_as_missing() -> None:
    with pytest.raises(HarnessError, match="a fixture path is required"):
        ReplayAdapter.from_config({"file": ""}, env={ENV_FILE: ""})


async def test_replay_81_child_files_in_config_route_live_sessions_to_child_scripts(
    tmp_path: Path,
) -> None:
    parent = await _export(tmp_path, "parent", "p1")
    child = await _export(tmp_path, "child", "c1")
    adapter = ReplayAdapter.from_config({"file": str(parent), "child_files": [str(child)]}, env={})
    runtime = _runtime(adapter)
    assert [await _answer(runtime, "x"), await _answer(runtime, "y")] == ["p1", "c1"]


async def test_replay_82_environment_child_files_are_used_when_config_omits_them(
    tmp_path: Path,
) -> None:
    parent = await _export(tmp_path, "parent", "p1")
    one = await _export(tmp_path, "one", "c1")
    two = await _export(tmp_path, "two", "c2")
    env = {ENV_FILE: str(parent), ENV_CHILD_FILES: os.pathsep.join([str(one), str(two)])}
    adapter = ReplayAdapter.from_config(None, env=env)
    assert [s.session_id for s in adapter.scripts] == ["parent", "one", "two"]


async def test_replay_83_an_empty_environment_child_list_means_single_session(
    tmp_path: Path,
) -> None:
    parent = await _export(tmp_path, "parent", "p1")
    adapter = ReplayAdapter.from_config(None, env={ENV_FILE: str(parent), ENV_CHILD_FILES: ""})
    assert [s.session_id for s in adapter.scripts] == ["parent"]


def test_replay_unknown_config_key_is_rejected() -> None:
    with pytest.raises(HarnessError, match='unknown config key "files"'):
        ReplayAdapter.from_config({"files": "x"}, env={})
