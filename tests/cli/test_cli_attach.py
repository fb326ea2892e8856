"""`modelwire chat --attach FILE` (repeatable), a real process against a loopback Chat
Completions server (the OpenAI reference's streaming shape; "File inputs" for the ``file`` part,
"Audio inputs" for ``input_audio``): the files reach the request in order after the prompt's
text, and files the CLI cannot send, or a model that cannot read them, fail with one error line
before any request."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from aiohttp import web
from cli_helpers import assert_one_line_error, run_cli_async

STREAM = (
    'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"Read."},"finish_reason":"stop"}]}\n\n'
    'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1}}\n\n'
    "data: [DONE]\n\n"
)


async def _serve(seen: list[dict[str, Any]]) -> tuple[web.AppRunner, str]:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(await request.json())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(STREAM.encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


def _config(home: Path, url: str) -> str:
    path = home / "attach.toml"
    path.write_text(
        "[providers.oa]\n"
        'api = "openai-completions"\n'
        f'base_url = "{url}/v1"\n'
        'auth = "none"\n'
        'models = [{ id = "seer", input = ["text", "image", "audio"] }, { id = "plain" }]\n',
        encoding="utf-8",
    )
    return str(path)


async def test_attached_pdf_and_audio_follow_the_prompt(tmp_path: Path) -> None:
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4 tiny")
    wav = tmp_path / "note.wav"
    wav.write_bytes(b"RIFF....WAVEfmt ")
    seen: list[dict[str, Any]] = []
    runner, url = await _serve(seen)
    try:
        args = ["chat", "-m", "oa:seer", "--config", _config(tmp_path, url), "--no-stream"]
        args += ["--attach", str(pdf), "--attach", str(wav), "Summarize."]
        result = await run_cli_async(tmp_path, args, env={"MODELWIRE_LOG": "memory:"})
    finally:
        await runner.cleanup()
    assert result.code == 0, result.err
    assert "Read." in result.out
    parts = seen[0]["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "Summarize."}
    data = base64.b64encode(b"%PDF-1.4 tiny").decode()
    assert parts[1] == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{data}"},
    }
    assert parts[2]["type"] == "input_audio" and parts[2]["input_audio"]["format"] == "wav"
    assert json.dumps(seen).count(data) == 1


async def test_files_the_cli_or_the_model_cannot_send_fail_before_any_request(
    tmp_path: Path,
) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(b"\x89PNG")
    pdf = tmp_path / "r.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    seen: list[dict[str, Any]] = []
    runner, url = await _serve(seen)
    try:
        config = _config(tmp_path, url)
        base = ["chat", "--config", config, "--no-stream"]
        env = {"MODELWIRE_LOG": "memory:"}
        png = await run_cli_async(
            tmp_path, [*base, "-m", "oa:seer", "--attach", str(image), "Hi"], env=env
        )
        missing = await run_cli_async(
            tmp_path, [*base, "-m", "oa:seer", "--attach", str(tmp_path / "no.pdf"), "Hi"], env=env
        )
        plain = await run_cli_async(
            tmp_path, [*base, "-m", "oa:plain", "--attach", str(pdf), "Hi"], env=env
        )
    finally:
        await runner.cleanup()
    assert_one_line_error(png, "cat.png", "attachment service")
    assert_one_line_error(missing, "no.pdf")
    assert plain.code != 0 and "does not accept documents" in plain.err, plain.err
    assert "UNSUPPORTED_CONTENT" in plain.err and "Traceback" not in plain.err
    assert seen == []
