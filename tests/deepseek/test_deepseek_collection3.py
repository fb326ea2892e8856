"""The third collection's DeepSeek-model streams (`../shared/fixtures3/deepseek-chat`, DeepSeek V4
through the Charm Hyper proxy), served over loopback HTTP to the DeepSeek adapter whole and
re-chunked at random byte boundaries (hypothesis): each assembles to its `.expected.json`, and a
successful finish names the stream's own id and model (no finish of these is inferred: each
recording sends its finish_reason).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deepseek_helpers import (
    Server,
    check_folded,
    collect,
    expected_of,
    fold,
    make_adapter,
    options,
    raw_response,
    recorded_response,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

FOLDER = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures3" / "deepseek-chat"
if not FOLDER.is_dir():
    raise RuntimeError(f"recorded fixtures absent: {FOLDER} (CI must fail, not skip)")
STREAMS = [pytest.param(p, id=p.stem) for p in sorted(FOLDER.glob("*.sse"))]


def test_collection3_deepseek_folder_holds_its_five_streams() -> None:
    assert len(STREAMS) == 5


@pytest.mark.parametrize("path", STREAMS)
async def test_collection3_deepseek_stream_whole_assembles_to_expected(
    server: Server, path: Path
) -> None:
    server.queue(raw_response(path.read_bytes()))
    result = fold(await collect(make_adapter(server).stream(options())))
    check_folded(result, expected_of(path))
    assert result.finish is not None
    assert result.finish.replay_state == recorded_response(path)


@pytest.mark.parametrize("path", STREAMS)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
async def test_collection3_deepseek_stream_rechunked_assembles_to_expected(
    server: Server, path: Path, data: st.DataObject
) -> None:
    body = path.read_bytes()
    sizes = data.draw(st.lists(st.integers(1, 97), min_size=1, max_size=400))
    server.queue(raw_response(body, pieces=sizes))
    result = fold(await collect(make_adapter(server).stream(options())))
    check_folded(result, expected_of(path))
    assert result.finish is not None
    assert result.finish.replay_state == recorded_response(path)
