"""Summarise a cProfile run per chunk: own time by package and the top functions."""

from __future__ import annotations

import os
import pstats
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))


def _bucket(path: str, func: str) -> str:
    if path == "~":
        return "builtins/C"
    if "/modelwire/" in path:
        return "modelwire." + path.rsplit("/modelwire/", 1)[1].removesuffix(".py").replace("/", ".")
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if path.startswith(HERE):
        return "benchmarks (client/harness)"
    base = path.rsplit("/lib/python3", 1)
    if len(base) == 2 and "/" in base[1]:
        return "stdlib " + base[1].split("/", 2)[1].removesuffix(".py")
    return path


def write_summary(prof: Any, path: str, chunks: int) -> None:
    """Write own time per chunk by bucket and the 30 costliest functions to `path`."""
    st = pstats.Stats(prof)
    stats: dict[Any, Any] = st.stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values()) or 1e-9
    buckets: dict[str, float] = {}
    rows = []
    for (fpath, line, func), (_cc, nc, tt, _ct, _callers) in stats.items():
        b = _bucket(fpath, func)
        buckets[b] = buckets.get(b, 0.0) + tt
        short = fpath.split("site-packages/")[-1].split("/src/")[-1]
        rows.append((tt, nc, f"{short}:{line}({func})"))
    with open(path, "w") as f:
        f.write(
            f"cProfile (CPU-time timer) of the timed streams: {total:.3f} s own CPU over {chunks} chunks "
            f"({total / chunks * 1e6:.1f} us/chunk under the profiler, which inflates "
            "call-heavy code: read the shares, not the absolute figures)\n\n"
        )
        f.write("own time by package/module:\n")
        for b, t in sorted(buckets.items(), key=lambda kv: -kv[1]):
            if t / total >= 0.005:
                f.write(f"  {t / total * 100:5.1f}%  {t / chunks * 1e6:7.2f} us/chunk  {b}\n")
        f.write("\ntop functions by own time:\n")
        for tt, nc, name in sorted(rows, reverse=True)[:30]:
            f.write(f"  {tt / total * 100:5.1f}%  calls/chunk {nc / chunks:6.2f}  {name}\n")
