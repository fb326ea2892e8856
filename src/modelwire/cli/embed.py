"""`modelwire embed -m ROUTE:MODEL`: every non-empty stdin line embedded, one JSON line out each.

Lines are read as UTF-8 (a trailing ``\\r`` dropped; blank lines skipped, since providers refuse
empty inputs) and sent through `LlmRuntime.embed` in parts of `LINES_PER_CALL` lines (the runtime
splits each part further by the provider's request limit); each vector is written as
``{"line": N, "embedding": [...]}`` (N counts input lines from 1), or with ``--format base64``
``{"line": N, "embedding": "<base64 float32>"}``, in input order. A summary goes to stderr:
vectors, dimensions, input tokens and cost (when known).
"""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Final

import msgspec

from .errors import fail

__all__ = ["LINES_PER_CALL", "run_embed"]

LINES_PER_CALL: Final = 8192
"""How many stdin lines one `embed` call takes (the output of each part is written at once)."""


class _Line(msgspec.Struct):
    line: int
    embedding: list[float] | str


def _split_model(value: str) -> tuple[str, str]:
    route, sep, model = value.partition(":")
    if not sep or not route or not model:
        fail(f"-m {value!r}: give ROUTE:MODEL, e.g. openai:text-embedding-3-small")
    return route, model


async def run_embed(
    model: str,
    *,
    dimensions: int | None,
    encoding: str,
    config_path: str | None,
) -> int:
    """Embed stdin's lines (see the module docstring); 0 when every line was embedded."""
    from ..agent.setup import open_runtime
    from ..vocab import EmbedOptions

    route, name = _split_model(model)
    if encoding not in ("float", "base64"):
        fail(f"--format {encoding!r}: give float or base64")
    numbered = [
        (number, text.rstrip("\r"))
        for number, text in enumerate(sys.stdin.read().split("\n"), start=1)
        if text.strip()
    ]
    if not numbered:
        fail("no input: pipe the texts to embed on stdin, one per line")
    runtime = open_runtime(config_path)
    encoder = msgspec.json.Encoder()
    out = sys.stdout.buffer
    tokens: int | None = 0
    cost: Decimal | None = Decimal(0)
    dims = 0
    for start in range(0, len(numbered), LINES_PER_CALL):
        part = numbered[start : start + LINES_PER_CALL]
        options = EmbedOptions(
            route,
            name,
            inputs=tuple(text for _, text in part),
            dimensions=dimensions,
            encoding_format="base64" if encoding == "base64" else "float",
        )
        result = await runtime.embed(options)
        dims = result.dimensions
        tokens = (
            None if tokens is None or result.usage is None else tokens + result.usage.input_tokens
        )
        cost = None if cost is None or result.cost is None else cost + result.cost
        lines = [
            encoder.encode(_Line(number, vector))  # type: ignore[arg-type]
            for (number, _), vector in zip(part, result.vectors, strict=True)
        ]
        out.write(b"\n".join(lines) + b"\n")
        out.flush()
    used = "unknown" if tokens is None else str(tokens)
    price = "unknown" if cost is None else f"${cost}"
    sys.stderr.write(
        f"{len(numbered)} vectors of {dims} dimensions from {route}:{name}; "
        f"{used} input tokens, cost {price}\n"
    )
    return 0
