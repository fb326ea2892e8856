"""The web-chat example's server: the page (`index.html`, the bundle `chat.js`) and the agent
endpoints of `modelwire serve` in one aiohttp app (one origin: no CORS needed).

    npm install && npm run build          # chat.js: the AI SDK bundled, no CDN
    python server.py myapp.agents:make_agent --log chat.db --port 8000

`make_app(factory, bundle=..., log=...)` is the app (the tests run it in-process). The page alone
works against any `modelwire serve --agent chat=MODULE:FACTORY` that serves it on its origin.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aiohttp import web

from modelwire.serve import create_app

HERE = Path(__file__).resolve().parent


def make_app(
    factory: Any, *, bundle: Path = HERE / "chat.js", log: str = "memory:", name: str = "chat"
) -> web.Application:
    """The page at `/`, its bundle at `/chat.js`, and agent `name` at `/v1/agents/{name}/…`."""
    app = create_app({}, log, agents={name: factory})
    page = (HERE / "index.html").read_text(encoding="utf-8")
    page = page.replace('<html lang="en">', f'<html lang="en" data-agent="{name}">')

    async def index(request: web.Request) -> web.StreamResponse:
        return web.Response(text=page, content_type="text/html")

    async def script(request: web.Request) -> web.StreamResponse:
        return web.FileResponse(bundle, headers={"Content-Type": "text/javascript"})

    app.router.add_get("/", index)
    app.router.add_get("/chat.js", script)
    return app


def main() -> None:
    from modelwire.cli.worker import load_factory

    parser = argparse.ArgumentParser(description="Serve the web-chat example.")
    parser.add_argument("agent", help="MODULE:FACTORY, FACTORY(log) -> Agent")
    parser.add_argument("--log", default="web-chat.db")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    app = make_app(load_factory(args.agent), log=args.log)
    web.run_app(app, host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
