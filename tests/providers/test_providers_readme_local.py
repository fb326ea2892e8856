"""The README's `[providers.local]` example works against an Ollama-style server as written
(issue #16): no key in the environment, no Authorization header, a recorded local stream."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from providers_fixtures import FIXTURES, MockServer, Reply

from modelwire.adapters.providers import ProvidersAdapter
from modelwire.vocab import GenerateOptions, TextDelta, user_message

README = Path(__file__).resolve().parents[2] / "README.md"


def _local_profile() -> dict[str, object]:
    blocks = re.findall(r"```toml\n(.*?)```", README.read_text(), re.S)
    local = [b for b in blocks if "[providers.local]" in b]
    assert len(local) == 1, "the README shows one [providers.local] example"
    text = "\n".join(line.strip() for line in local[0].splitlines())
    profile = tomllib.loads(text)["providers"]["local"]
    assert isinstance(profile, dict)
    return profile


async def test_readme_local_profile_streams_from_an_ollama_style_server_without_a_key() -> None:
    profile = _local_profile()
    body = (FIXTURES / "ollama-local" / "fantasy-llamacpp-gptoss-text.sse").read_bytes()
    async with MockServer([Reply(reads=[body])]) as server:
        base = str(profile["base_url"])
        profile["base_url"] = server.url + base[base.index("/v1") :]  # the same path, loopback
        adapter = ProvidersAdapter.from_config({"providers": {"local": profile}}, env={})
        assert adapter.missing_credential("local") is None
        options = GenerateOptions("local", "qwen3:8b", (user_message("Say hi in Portuguese"),))
        text = "".join([c.text async for c in adapter.stream(options) if isinstance(c, TextDelta)])
    assert text == "Olá!"
    assert server.paths == ["/v1/chat/completions"]
    assert "authorization" not in server.headers[0]
