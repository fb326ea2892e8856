"""The recorded fixtures beside the repository are all there: a missing or shrunken folder fails
the suite (it never silently skips the tests that read it)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures"
FIXTURES3 = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures3"

EXPECTED_FILES = {
    # folder: (recorded streams `*.sse`, expected results `*.expected.json`)
    "anthropic-messages": (43, 43),
    "azure-openai": (10, 10),
    "bedrock-converse": (0, 12),
    "deepseek-chat": (24, 24),
    "errors": (0, 41),
    "google-generative-ai": (23, 23),
    "mistral": (12, 12),
    "ollama-local": (7, 7),
    "openai-chat": (41, 41),
    "openai-responses": (34, 34),
    "structured-output": (11, 11),
}
"""The counts of the two collections as laid out in `MANIFEST.md`; a new recording raises them."""


def test_fixtures_folder_is_present() -> None:
    assert FIXTURES.is_dir(), f"{FIXTURES} is absent: the recorded-traffic tests cannot run"
    assert (FIXTURES / "MANIFEST.md").is_file()


@pytest.mark.parametrize("folder", sorted(EXPECTED_FILES))
def test_fixture_folder_holds_the_expected_recordings(folder: str) -> None:
    path = FIXTURES / folder
    assert path.is_dir(), f"{path} is absent"
    streams = len(list(path.glob("*.sse")))
    expected = len(list(path.glob("*.expected.json")))
    assert streams >= EXPECTED_FILES[folder][0]
    assert expected >= EXPECTED_FILES[folder][1]


EXPECTED_FILES_3 = {
    # folder: (recorded streams `*.sse` / `*.eventstream`, HTTP errors `errors/*.http.json`)
    "anthropic-messages": (24, 5),
    "azure-openai": (4, 0),
    "bedrock-converse": (2, 1),
    "bedrock-invoke": (3, 0),
    "deepseek-chat": (5, 0),
    "google-generative-ai": (20, 6),
    "mistral": (4, 0),
    "openai-chat": (35, 8),
    "openai-responses": (20, 2),
}
"""The third collection (117 streams, 22 errors) as its `MANIFEST.md` counts it."""


def test_third_collection_folder_is_present() -> None:
    assert FIXTURES3.is_dir(), f"{FIXTURES3} is absent: the third collection's tests cannot run"
    assert (FIXTURES3 / "MANIFEST.md").is_file()


@pytest.mark.parametrize("folder", sorted(EXPECTED_FILES_3))
def test_third_collection_folder_holds_the_expected_recordings(folder: str) -> None:
    path = FIXTURES3 / folder
    assert path.is_dir(), f"{path} is absent"
    streams = [*path.glob("*.sse"), *path.glob("*.eventstream")]
    errors = list((path / "errors").glob("*.http.json"))
    assert len(streams) >= EXPECTED_FILES_3[folder][0]
    assert all(s.with_suffix(".expected.json").is_file() for s in streams)
    assert len(errors) >= EXPECTED_FILES_3[folder][1]
    assert sum(EXPECTED_FILES_3[f][0] for f in EXPECTED_FILES_3) == 117
    assert sum(EXPECTED_FILES_3[f][1] for f in EXPECTED_FILES_3) == 22
