"""The recorded fixtures beside the repository are all there: a missing or shrunken folder fails
the suite (it never silently skips the tests that read it)."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / ".." / "shared" / "fixtures"

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
