"""G.12 cases 20–29 (primary script and sidecar), 58–61 (export header), 62–69 (sessions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_helpers import (
    as_events,
    chunk_json,
    error_chunks,
    record,
    text_chunks,
    turn,
    write_json,
)

from modelwire.adapters.replay import (
    ChunksEntry,
    HangEntry,
    ReplayAdapter,
    ThrowEntry,
    derive_replay_script,
    parse_override,
)
from modelwire.errors import ErrorCode, HarnessError
from modelwire.session import MemoryLog
from modelwire.session.export import export_session
from modelwire.vocab import LlmFailure


def _entries(adapter: ReplayAdapter, index: int = 0) -> list[object]:
    return [call.entry for call in adapter.scripts[index].calls]


def _texts(adapter: ReplayAdapter, index: int = 0) -> list[str]:
    out = []
    for entry in _entries(adapter, index):
        assert isinstance(entry, ChunksEntry | ThrowEntry)
        out.append("".join(getattr(c, "text", "") for c in entry.chunks if c.type == "text-delta"))
    return out


async def _two_calls(tmp_path: Path, name: str = "rec.jsonl") -> Path:
    return await record(turn("hi", [error_chunks(), text_chunks("ok")]), tmp_path / name)


def _override_error(path: Path) -> HarnessError:
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    return caught.value


# ---- loadReplayScript (20–29) ----------------------------------------------------------------


async def test_replay_20_without_override_the_script_is_derived_from_the_export(
    tmp_path: Path,
) -> None:
    adapter = ReplayAdapter.from_file(await _two_calls(tmp_path))
    assert _entries(adapter) == [
        ChunksEntry(tuple(error_chunks())),
        ChunksEntry(tuple(text_chunks("ok"))),
    ]


async def test_replay_21_bare_array_override_replaces_the_script_and_ignores_the_export(
    tmp_path: Path,
) -> None:
    export = tmp_path / "never-written.jsonl"
    write_json(
        Path(f"{export}.override.json"),
        [{"kind": "chunks", "chunks": [chunk_json(c) for c in text_chunks("scripted")]}],
    )
    adapter = ReplayAdapter.from_file(export)
    assert _entries(adapter) == [ChunksEntry(tuple(text_chunks("scripted")))]
    # a malformed export is not read either
    export.write_text("{not json\n")
    assert _entries(ReplayAdapter.from_file(export)) == _entries(adapter)


async def test_replay_22_configured_but_missing_override_falls_back_to_the_export(
    tmp_path: Path,
) -> None:
    path = await _two_calls(tmp_path)
    adapter = ReplayAdapter.from_file(path, override=tmp_path / "absent.json")
    assert _texts(adapter) == ["", "ok"]


def test_replay_23_missing_fixture_is_fixture_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(missing)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert f"fixture not found: {missing}" in caught.value.message


async def test_replay_24_document_neither_list_nor_patches_is_rejected(tmp_path: Path) -> None:
    path = await _two_calls(tmp_path)
    write_json(Path(f"{path}.override.json"), {"entries": []})
    error = _override_error(path)
    assert "document must be a list of entries or" in error.message


async def test_replay_25_patch_at_0_replaces_the_first_call_and_keeps_the_second(
    tmp_path: Path,
) -> None:
    path = await _two_calls(tmp_path)
    entry = {"kind": "chunks", "chunks": [chunk_json(c) for c in text_chunks("patched")]}
    write_json(Path(f"{path}.override.json"), {"patches": [{"at": 0, "entry": entry}]})
    adapter = ReplayAdapter.from_file(path)
    assert _texts(adapter) == ["patched", "ok"]
    assert adapter.scripts[0].calls[0].request is None  # sidecar entries carry no request


async def test_replay_26_patch_at_length_appends(tmp_path: Path) -> None:
    path = await record(turn("hi", [text_chunks("ok")]), tmp_path / "one.jsonl")
    throw = {"kind": "throw", "chunks": [], "message": "reset", "code": "TRANSPORT"}
    ok = {"kind": "chunks", "chunks": [chunk_json(c) for c in text_chunks("after")]}
    write_json(
        Path(f"{path}.override.json"),
        {"patches": [{"at": 0, "entry": throw}, {"at": 1, "entry": ok}]},
    )
    entries = _entries(ReplayAdapter.from_file(path))
    assert entries == [
        ThrowEntry((), LlmFailure("reset", "TRANSPORT")),
        ChunksEntry(tuple(text_chunks("after"))),
    ]


async def test_replay_27_patch_beyond_length_raises_with_the_derived_length(
    tmp_path: Path,
) -> None:
    path = await _two_calls(tmp_path)
    sidecar = write_json(
        Path(f"{path}.override.json"), {"patches": [{"at": 3, "entry": {"kind": "hang"}}]}
    )
    error = _override_error(path)
    assert str(sidecar) in error.message and "patches[0].at" in error.message
    assert "override patch index 3 out of range (derived script has 2 call(s)" in error.message


_GOOD_CHUNKS = [{"type": "text-delta", "index": 0, "text": "x"}]
MALFORMED = [
    ("entry-not-object", [1], "entries[0] must be an object"),
    ("chunks-not-array", [{"kind": "chunks", "chunks": {}}], "entries[0].chunks must be an array"),
    (
        "chunks-extra-field",
        [{"kind": "chunks", "chunks": [], "extra": 1}],
        "entries[0] has invalid chunks-entry fields",
    ),
    (
        "chunk-unknown-type",
        [{"kind": "chunks", "chunks": [{"type": "delta"}]}],
        "entries[0].chunks[0] must have a known StreamChunk type",
    ),
    (
        "chunk-not-object",
        [{"kind": "chunks", "chunks": ["text"]}],
        "entries[0].chunks[0] must be an object",
    ),
    (
        "throw-missing-code",
        [{"kind": "throw", "chunks": [], "message": "m"}],
        "entries[0] has invalid throw-entry fields",
    ),
    (
        "throw-empty-message",
        [{"kind": "throw", "chunks": [], "message": "", "code": "X"}],
        "entries[0].message must be a non-empty string",
    ),
    (
        "throw-empty-code",
        [{"kind": "throw", "chunks": _GOOD_CHUNKS, "message": "m", "code": ""}],
        "entries[0].code must be a non-empty string",
    ),
    (
        "hang-extra-field",
        [{"kind": "hang", "at": 1}],
        "entries[0] has invalid hang-entry fields",
    ),
    (
        "hang-empty-ready-file",
        [{"kind": "hang", "ready_file": ""}],
        "entries[0].ready_file must be a non-empty string",
    ),
    ("unknown-kind", [{"kind": "sleep"}], 'entries[0].kind has unknown kind "sleep"'),
    ("patch-not-object", {"patches": [3]}, "patches[0] must be an object"),
    (
        "patch-extra-key",
        {"patches": [{"at": 0, "entry": {"kind": "hang"}, "why": 1}]},
        "patches[0] must contain exactly at and entry",
    ),
    (
        "patch-entry-invalid",
        {"patches": [{"at": 0, "entry": {"kind": "chunks"}}]},
        "patches[0].entry has invalid chunks-entry fields",
    ),
]


@pytest.mark.parametrize(
    ("doc", "message"), [(d, m) for _, d, m in MALFORMED], ids=[i for i, _, _ in MALFORMED]
)
def test_replay_28_malformed_override_is_rejected_with_the_specific_message(
    doc: object, message: str
) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_override(doc, "side.json")
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert caught.value.message.startswith(f"replay: invalid override side.json: {message}")


def test_replay_28_negative_patch_index_is_rejected() -> None:
    with pytest.raises(HarnessError, match=r"patches\[0\]\.at must be a non-negative integer"):
        parse_override({"patches": [{"at": -1, "entry": {"kind": "hang"}}]}, "side.json")


def test_replay_29_duplicate_patch_indexes_are_rejected() -> None:
    doc = {"patches": [{"at": 0, "entry": {"kind": "hang"}}, {"at": 0, "entry": {"kind": "hang"}}]}
    with pytest.raises(HarnessError) as caught:
        parse_override(doc, "side.json")
    assert "patches[1].at duplicate override patch index 0" in caught.value.message


# ---- export header (58–61) -------------------------------------------------------------------


async def test_replay_58_reads_session_id_and_created_at_from_the_export_header(
    tmp_path: Path,
) -> None:
    path = await record(turn("hi", [text_chunks("ok")]), tmp_path / "a.jsonl", "abc")
    created = json.loads(path.read_text().splitlines()[0])["created_at"]
    script = ReplayAdapter.from_file(path).scripts[0]
    assert (script.session_id, script.created_at, script.source) == ("abc", created, str(path))


def _with_seed(path: Path, seed: int) -> None:
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["seed_length"] = seed
    lines[0] = json.dumps(head)
    path.write_text("\n".join(lines) + "\n")


async def test_replay_59_reads_a_non_zero_seed_length(tmp_path: Path) -> None:
    datas = turn("a", [text_chunks("one")]) + turn("b", [text_chunks("two")], number=2)
    path = await record(datas, tmp_path / "child.jsonl")
    first_turn_events = len(turn("a", [text_chunks("one")]))
    _with_seed(path, first_turn_events)
    assert _texts(ReplayAdapter.from_file(path)) == ["two"]


async def test_replay_60_export_without_header_defaults_session_id_to_empty(
    tmp_path: Path,
) -> None:
    path = await record(turn("hi", [text_chunks("ok")]), tmp_path / "a.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    first_time = json.loads(lines[1])["time"]
    path.write_text("".join(lines[1:]))
    script = ReplayAdapter.from_file(path).scripts[0]
    assert (script.session_id, script.created_at) == ("", first_time)


def test_replay_61_empty_export_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(HarnessError) as caught:
        ReplayAdapter.from_file(path)
    assert caught.value.code == ErrorCode.INVALID_REPLAY_FILE
    assert str(path) in caught.value.message and "no events" in caught.value.message


# ---- loadSessionScripts (62–69) --------------------------------------------------------------


async def _session(tmp_path: Path, name: str, text: str, created: int) -> Path:
    path = await record(turn("q", [text_chunks(text)]), tmp_path / f"{name}.jsonl", name)
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["created_at"] = created
    lines[0] = json.dumps(head)
    path.write_text("\n".join(lines) + "\n")
    return path


async def test_replay_62_single_session_is_one_primary_script_with_header_facts(
    tmp_path: Path,
) -> None:
    path = await _session(tmp_path, "main", "m", 50)
    (script,) = ReplayAdapter.from_file(path).scripts
    assert (script.session_id, script.created_at) == ("main", 50)


async def test_replay_63_parent_first_then_children_by_created_at(tmp_path: Path) -> None:
    parent = await _session(tmp_path, "parent", "p", 100)
    late = await _session(tmp_path, "late", "l", 300)
    early = await _session(tmp_path, "early", "e", 10)
    adapter = ReplayAdapter.from_file(parent, children=[late, early])
    assert [s.session_id for s in adapter.scripts] == ["parent", "early", "late"]


def test_replay_64_missing_child_file_raises_child_fixture_not_found(tmp_path: Path) -> None:
    parent = tmp_path / "p.jsonl"
    write_json(Path(f"{parent}.override.json"), [{"kind": "hang"}])
    with pytest.raises(HarnessError, match="child fixture not found"):
        ReplayAdapter.from_file(parent, children=[tmp_path / "gone.jsonl"])


async def test_replay_65_fork_child_derives_only_events_at_or_after_seed_length(
    tmp_path: Path,
) -> None:
    inherited = turn("a", [text_chunks("parent-call")])
    child = await record(
        inherited + turn("b", [text_chunks("child-call")], number=2), tmp_path / "c.jsonl"
    )
    _with_seed(child, len(inherited))
    parent = await _session(tmp_path, "parent", "p", 0)
    adapter = ReplayAdapter.from_file(parent, children=[child])
    assert _texts(adapter, 1) == ["child-call"]
    # inherited history still counts as the child's recorded request context
    request = adapter.scripts[1].calls[0].request
    assert request is not None and len(request.messages) == 3


async def test_replay_66_override_drives_the_primary_while_children_still_derive(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "p.jsonl"
    write_json(Path(f"{parent}.override.json"), [{"kind": "hang"}])
    child = await _session(tmp_path, "kid", "k", 5)
    adapter = ReplayAdapter.from_file(parent, children=[child])
    assert _entries(adapter) == [HangEntry()]
    assert _texts(adapter, 1) == ["k"]


def test_replay_67_override_only_primary_has_empty_id_and_zero_created_at(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "p.jsonl"
    write_json(Path(f"{parent}.override.json"), [{"kind": "hang"}])
    (script,) = ReplayAdapter.from_file(parent).scripts
    assert (script.session_id, script.created_at) == ("", 0)


async def test_replay_68_same_created_at_children_order_by_id_after_the_primary(
    tmp_path: Path,
) -> None:
    parent = await _session(tmp_path, "parent", "p", 1)
    b = await _session(tmp_path, "b-kid", "b", 7)
    a = await _session(tmp_path, "a-kid", "a", 7)
    adapter = ReplayAdapter.from_file(parent, children=[b, a])
    assert [s.session_id for s in adapter.scripts] == ["parent", "a-kid", "b-kid"]


async def test_replay_69_primary_stays_first_when_a_child_ties_or_precedes_it(
    tmp_path: Path,
) -> None:
    parent = await _session(tmp_path, "zz-parent", "p", 9)
    tie = await _session(tmp_path, "aa-tie", "t", 9)
    older = await _session(tmp_path, "older", "o", 1)
    adapter = ReplayAdapter.from_file(parent, children=[tie, older])
    assert [s.session_id for s in adapter.scripts] == ["zz-parent", "older", "aa-tie"]


async def test_replay_from_log_derives_the_same_script_as_the_export(tmp_path: Path) -> None:
    log = MemoryLog()
    await log.append_many("s", turn("hi", [error_chunks(), text_chunks("ok")]))
    await export_session(log, "s", tmp_path / "s.jsonl")
    from_log = await ReplayAdapter.from_log(log, "s")
    from_file = ReplayAdapter.from_file(tmp_path / "s.jsonl")
    assert _entries(from_log) == _entries(from_file)
    events = await log.read("s")
    assert [c.entry for c in derive_replay_script(as_events([e.data for e in events]))] == (
        _entries(from_log)
    )
