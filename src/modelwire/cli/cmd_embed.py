"""The `modelwire embed` command (typer); the work is in `embed.py`."""

from __future__ import annotations

from typing import Annotated

import typer

from .errors import run_async
from .options import ConfigOption, DebugOption, examples

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add `embed` to `app`."""
    app.command(
        "embed",
        short_help="Embed stdin's lines; one JSON line out per line.",
        epilog=examples(
            "printf 'first text\\nsecond text\\n' | modelwire embed -m openai:text-embedding-3-small",
            "modelwire embed -m google:gemini-embedding-001 --dimensions 768 < lines.txt",
        ),
    )(embed)


def embed(
    model: Annotated[
        str,
        typer.Option(
            "-m",
            "--model",
            metavar="ROUTE:MODEL",
            help="Route and embedding model, e.g. openai:text-embedding-3-small.",
            show_default=False,
        ),
    ],
    dimensions: Annotated[
        int | None,
        typer.Option(
            "--dimensions", min=1, metavar="N", help="Shorter vectors, where the model takes it."
        ),
    ] = None,
    encoding: Annotated[
        str,
        typer.Option(
            "--format", metavar="FORMAT", help="float (JSON numbers) or base64 (float32)."
        ),
    ] = "float",
    config: ConfigOption = None,
    debug: DebugOption = False,
) -> None:
    """Embed every non-empty line of stdin with ROUTE:MODEL and write one JSON line per input
    line, in order: {"line": N, "embedding": [...]}. A summary (vectors, dimensions, tokens,
    cost) goes to stderr."""

    async def go() -> int:
        from .embed import run_embed

        return await run_embed(model, dimensions=dimensions, encoding=encoding, config_path=config)

    run_async(go, debug=debug)
