"""`modelwire embed -m ROUTE:MODEL`, a real process against a loopback server answering as the
OpenAI API reference's "Create embeddings" documents (``POST /v1/embeddings``, ``data[].index``
and ``embedding``, ``usage.prompt_tokens``): stdin lines in, one JSON line out per line in
order, a summary on stderr, and bad input refused with one error line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from cli_helpers import assert_one_line_error, run_cli_async


def _vector(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)) % 97), 0.5]


async def _serve(seen: list[dict[str, Any]]) -> tuple[web.AppRunner, str]:
    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(t)}
            for i, t in enumerate(body["input"])
        ]
        used = sum(len(t) for t in body["input"])
        usage = {"prompt_tokens": used, "total_tokens": used}
        return web.json_response({"object": "list", "data": data, "usage": usage})

    app = web.Application()
    app.router.add_post("/v1/embeddings", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def _config(home: Path, url: str) -> str:
    path = home / "embed.toml"
    path.write_text(
        "[providers.local]\n"
        'api = "openai-completions"\n'
        f'base_url = "{url}/v1"\n'
        'auth = "none"\n'
        'models = [{ id = "nomic-embed-text", cost = { input = 1, output = 0 } }]\n',
        encoding="utf-8",
    )
    return str(path)


async def test_stdin_lines_become_json_lines_in_order(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    runner, url = await _serve(seen)
    try:
        config = _config(tmp_path, url)
        result = await run_cli_async(
            tmp_path,
            ["embed", "-m", "local:nomic-embed-text", "--config", config],
            input="first line\n\nsecond\r\nthird one\n",
        )
    finally:
        await runner.cleanup()
    assert result.code == 0, result.err
    rows = [json.loads(line) for line in result.out.splitlines()]
    assert rows == [
        {"line": 1, "embedding": _vector("first line")},
        {"line": 3, "embedding": _vector("second")},
        {"line": 4, "embedding": _vector("third one")},
    ]
    assert seen[0]["input"] == ["first line", "second", "third one"]
    assert seen[0]["encoding_format"] == "base64"  # asked; this server answers floats anyway
    # 10 + 6 + 9 = 25 tokens at $1 per million
    assert "3 vectors of 3 dimensions" in result.err and "25 input tokens" in result.err
    assert "$0.000025" in result.err


async def test_format_base64_writes_float32_base64(tmp_path: Path) -> None:
    import array
    import base64

    seen: list[dict[str, Any]] = []
    runner, url = await _serve(seen)
    try:
        result = await run_cli_async(
            tmp_path,
            ["embed", "-m", "local:nomic-embed-text", "--format", "base64"],
            env={"MODELWIRE_CONFIG": _config(tmp_path, url)},
            input="hello\n",
        )
    finally:
        await runner.cleanup()
    assert result.code == 0, result.err
    row = json.loads(result.out)
    packed = array.array("f", base64.b64decode(row["embedding"]))
    assert row["line"] == 1 and packed.tolist() == _vector("hello")


async def test_bad_input_is_one_error_line(tmp_path: Path) -> None:
    config = _config(tmp_path, "http://127.0.0.1:9")
    empty = await run_cli_async(
        tmp_path, ["embed", "-m", "local:nomic-embed-text", "--config", config], input="\n\n"
    )
    assert_one_line_error(empty, "no input")
    bare = await run_cli_async(tmp_path, ["embed", "-m", "local", "--config", config], input="x\n")
    assert_one_line_error(bare, "ROUTE:MODEL")
    unknown = await run_cli_async(
        tmp_path, ["embed", "-m", "local:other-model", "--config", config], input="x\n"
    )
    assert unknown.code != 0 and "other-model" in unknown.err and "Traceback" not in unknown.err
