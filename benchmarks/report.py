"""Render one benchmark run as Markdown: per-chunk table, ratios, targets, concurrency, imports."""

from __future__ import annotations

import re
from typing import Any

from clients import CLIENTS, FLOOR_OF, HARD_FLOOR_OF
from report_durable import durable_section

PROTO_OF = {
    "floor-chat": "chat",
    "floor-responses": "responses",
    "floor-anthropic": "anthropic",
    "hard-floor-chat": "chat",
    "hard-floor-responses": "responses",
    "hard-floor-anthropic": "anthropic",
    "mw-agent-memory": "chat",
    "mw-agent-sqlite": "chat",
    "mw-agent-postgres": "chat",
    "mw-deepseek": "chat",
    "mw-deepseek-stream": "chat",
    "mw-deepseek-otel": "chat",
    "mw-providers-chat": "chat",
    "mw-providers-responses": "responses",
    "mw-providers-anthropic": "anthropic",
    "openai-sdk": "chat",
    "openai-sdk-responses": "responses",
    "litellm": "chat",
    "litellm-anthropic": "anthropic",
    "pydantic-ai": "chat",
    "pydantic-ai-agent": "chat",
}
# peer columns of the ratio table: which peer client stands for it on each protocol
PEER_COLUMNS = {
    "openai SDK": {"chat": "openai-sdk", "responses": "openai-sdk-responses"},
    "LiteLLM": {"chat": "litellm", "anthropic": "litellm-anthropic"},
    "pydantic-ai (direct)": {"chat": "pydantic-ai"},
    "pydantic-ai (Agent)": {"chat": "pydantic-ai-agent"},
}


def _arg(row: dict[str, Any], flag: str, default: str = "") -> str:
    args = row.get("args", [])
    return args[args.index(flag) + 1] if flag in args else default


def step_of(row: dict[str, Any], sz: Any) -> str:
    """Which step a harness row belongs to."""
    if "--profile" in row.get("args", []):
        return "profile"
    if "--tag" in row.get("args", []):
        return _arg(row, "--tag")
    n, tb = int(_arg(row, "--n", "0")), int(_arg(row, "--tb", "0"))
    if "--mode" in row.get("args", []):
        return "conc" if n == sz.conc_n and tb else "conc_peer"
    if n == sz.big_n and tb == sz.big_tb:
        return "big"
    return "tool" if tb else "text"


def _f(x: float | None, fmt: str = "{:.1f}") -> str:
    return "–" if x is None else fmt.format(x)


def _status(row: dict[str, Any] | None) -> str | None:
    if row is None:
        return "not run"
    if not row.get("available", True):
        reason = str(row.get("reason", ""))
        return reason if reason.startswith("skipped") else f"not available: {reason}"
    if not row.get("ok", True):
        return f"**FAILED**: {row.get('error', '')}"
    return None


def _cell_us(row: dict[str, Any] | None) -> str:
    st = _status(row)
    if st is not None:
        return st if st == "not run" else st.split(":")[0]
    assert row is not None
    return f"{row['us_cpu_per_chunk']:.1f}"


def _xf(row: dict[str, Any] | None, floor: bool) -> float | None:
    if row is None or _status(row) is not None:
        return None
    return 1.0 if floor else row.get("x_floor")


def _xh(row: dict[str, Any] | None, client: str) -> float | None:
    """The row's CPU per chunk over the hard floor's (1.0 for the hard floor itself)."""
    if row is None or _status(row) is not None:
        return None
    return 1.0 if client in HARD_FLOOR_OF.values() else row.get("x_hard_floor")


def render(
    rows: list[dict[str, Any]],
    imports: dict[str, Any],
    others: list[dict[str, Any]],
    mach: dict[str, str],
    sz: Any,
    elapsed: float,
    failures: list[str],
    *,
    quick: bool,
) -> str:
    """The whole Markdown report."""
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rows:
        by[(step_of(r, sz), r["client"])] = r
    clients = [c for c in CLIENTS if any(k[1] == c for k in by)]
    L: list[str] = []
    w = L.append
    w(
        "# modelwire benchmarks: side by side with the peers"
        + (" (--quick smoke run)" if quick else "")
    )
    w("")
    w(
        f"Run {mach['date']} on {mach['cpu']}, {mach['cores']} cores, {mach['os']}, "
        f"{mach['python']}; {elapsed:.0f} s in all. One local SSE server on 127.0.0.1 (its own "
        "process, CPU 0) serves pre-rendered streams; each client runs in its own process (CPU 1). "
        "CPU = user+sys of the client process (`getrusage`)."
    )
    w("")
    w(
        "**x floor** = the client's CPU per chunk over a bare aiohttp + `json.loads` loop of the same "
        "protocol, timed in the same process right before each timed stream (median of the per-stream "
        "ratios). **x hard floor**: the same over the *hard floor*, raw asyncio streams with the "
        "chunked transfer coding undone by hand and msgspec decoding only the fields a client needs "
        "(`clients/hardfloor.py`, timed beside the other floor). **Peer ratios** divide the peer's x "
        "floor by modelwire's, so both sides are normalised to a floor measured at the same moment "
        "(this VM drifts by tens of percent)."
    )
    w("")
    if failures:
        w("**FAILED**: " + "; ".join(failures))
        w("")
    tb = _arg(next((r for r in rows if step_of(r, sz) == "tool"), {}), "--tb", "?")
    w(
        f"## Per chunk, one stream of {sz.n:,} chunks (median of {sz.repeat} runs, peers {sz.peer_repeat}; tool stream: "
        f"{sz.tool_repeat} runs, one tool call of {tb} argument bytes)"
    )
    w("")
    w(
        "| client | protocol | µs CPU/chunk text · tool | x floor text · tool | x hard floor text · tool | chunks/s (one stream) | peak RSS MiB |"
    )
    w("|---|---|---|---|---|---|---|")
    for c in clients:
        t, tt = by.get(("text", c)), by.get(("tool", c))
        st = _status(t)
        name = (t or tt or {}).get("name", c)
        ver = (t or tt or {}).get("version", "")
        label = f"{name}<br>`{ver}`" if ver else name
        if st is not None and (tt is None or _status(tt) is not None):
            w(f"| {label} | {PROTO_OF[c]} | {st} | | | | |")
            continue
        fl = c in FLOOR_OF.values()
        xs = f"{_f(_xf(t, fl), '{:.2f}')} · {_f(_xf(tt, fl), '{:.2f}')}"
        xs += f" | {_f(_xh(t, c), '{:.2f}')} · {_f(_xh(tt, c), '{:.2f}')}"
        cps = _f(t.get("chunks_per_s") if t and st is None else None, "{:,.0f}")
        rss = _f(t.get("maxrss_mib") if t and st is None else None, "{:.0f}")
        w(f"| {label} | {PROTO_OF[c]} | {_cell_us(t)} · {_cell_us(tt)} | {xs} | {cps} | {rss} |")
    w("")
    mw_clients = [c for c in clients if c.startswith("mw-")]
    w(
        "## modelwire against the floor and each peer (how many times more CPU per chunk the other "
        "side spends; text · tool stream)"
    )
    w("")
    w("| modelwire client | x floor | x hard floor | " + " | ".join(PEER_COLUMNS) + " |")
    w("|---|---|---|" + "---|" * len(PEER_COLUMNS))
    ratios: dict[tuple[str, str], tuple[float | None, float | None]] = {}
    for c in mw_clients:
        t, tt = by.get(("text", c)), by.get(("tool", c))
        if _status(t) is not None and _status(tt) is not None:
            w(f"| {c} | {_status(t)} | |" + " |" * len(PEER_COLUMNS))
            continue
        cells = [f"{_f(_xf(t, False), '{:.2f}')} · {_f(_xf(tt, False), '{:.2f}')}"]
        cells.append(f"{_f(_xh(t, c), '{:.2f}')} · {_f(_xh(tt, c), '{:.2f}')}")
        for col, per in PEER_COLUMNS.items():
            peer = per.get(PROTO_OF[c])
            if peer is None:
                cells.append("n/a")
                continue
            vals = []
            for step, mine in (("text", t), ("tool", tt)):
                p, m = _xf(by.get((step, peer)), False), _xf(mine, False)
                vals.append(p / m if p and m else None)
            ratios[(c, col)] = (vals[0], vals[1])
            cells.append(" · ".join(_f(v, "{:.1f}×") for v in vals))
        w(f"| {c} | " + " | ".join(cells) + " |")
    w("")
    _targets(w, by, ratios, imports, others)
    durable_section(w, rows, by, others)
    _concurrency(w, by, sz)
    _big(w, by, sz)
    _imports(w, imports)
    _others(w, others)
    return "\n".join(L) + "\n"


def _verdict(ok: bool | None) -> str:
    return "–" if ok is None else ("**met**" if ok else "**missed**")


def _targets(
    w: Any, by: dict[Any, Any], ratios: dict[Any, Any], imports: dict[str, Any], others: list[Any]
) -> None:
    w("## Targets (DESIGN §6)")
    w("")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    ds = [_xf(by.get((s, "mw-deepseek")), False) for s in ("text", "tool")]
    hs = [_xh(by.get((s, "mw-deepseek")), "mw-deepseek") for s in ("text", "tool")]
    worst = max((x for x in ds if x is not None), default=None)
    w(
        f"| DeepSeek adapter ≤ 2× the floor | {_f(ds[0], '{:.2f}×')} · {_f(ds[1], '{:.2f}×')} "
        f"(hard floor: {_f(hs[0], '{:.2f}×')} · {_f(hs[1], '{:.2f}×')}) | "
        f"{_verdict(None if worst is None else worst <= 2.0)} |"
    )
    for col, need in (("openai SDK", 12.0), ("LiteLLM", 40.0)):
        v = ratios.get(("mw-deepseek", col), (None, None))
        least = min((x for x in v if x is not None), default=None)
        w(
            f"| DeepSeek adapter ≥ {need:.0f}× less CPU/chunk than {col} | "
            f"{_f(v[0], '{:.1f}×')} · {_f(v[1], '{:.1f}×')} | {_verdict(None if least is None else least >= need)} |"
        )
    plain = [by.get((s, "mw-deepseek")) for s in ("text", "tool")]
    traced = [by.get((s, "mw-deepseek-otel")) for s in ("text", "tool")]
    # Drift-corrected: each client's x floor comes from floor streams timed beside its own, so
    # the difference of the ratios times the floor's µs/chunk is the instrumentation's own cost
    # (the raw µs of two processes timed minutes apart differ by the VM's drift).
    extra = [
        (t["x_floor"] - p["x_floor"]) * t["floor_us_cpu_per_chunk"]
        if p and t and _status(p) is None and _status(t) is None and t.get("floor_us_cpu_per_chunk")
        else None
        for p, t in zip(plain, traced, strict=True)
    ]
    top_extra = max((x for x in extra if x is not None), default=None)
    w(
        f"| OpenTelemetry instrumentation < 1 µs/chunk extra (x-floor difference × floor µs) | {_f(extra[0], '{:+.2f}')} · {_f(extra[1], '{:+.2f}')} µs | "
        f"{_verdict(None if top_extra is None else top_extra < 1.0)} |"
    )
    for c in ("mw-providers-chat", "mw-providers-responses", "mw-providers-anthropic"):
        us = [by.get((s, c)) for s in ("text", "tool")]
        vals = [r["us_cpu_per_chunk"] if r and _status(r) is None else None for r in us]
        top = max((x for x in vals if x is not None), default=None)
        w(
            f"| {c.removeprefix('mw-')} ≤ 25 µs/chunk | {_f(vals[0], '{:.1f}')} · {_f(vals[1], '{:.1f}')} µs | "
            f"{_verdict(None if top is None else top <= 25.0)} |"
        )
    conc = by.get(("conc", "mw-deepseek"))
    if conc is not None and _status(conc) is None:
        w(
            f"| {conc['concurrency']:,} concurrent streams: zero errors, nothing lost | "
            f"{conc['concurrency']:,} × {conc['n']} chunks checked exactly | **met** |"
        )
    else:
        w(
            f"| 1,000 concurrent streams: zero errors, nothing lost | {_status(conc)} | {_verdict(False if conc else None)} |"
        )
    imp = imports.get("modelwire", {})
    ms = imp.get("importtime_min_ms") if imp.get("available") else None
    w(
        f"| `import modelwire` < 100 ms (`-X importtime`, best of {imp.get('runs', '?')}) | {_f(ms, '{:.0f} ms')} (median {_f(imp.get('importtime_ms'), '{:.0f}')}) | {_verdict(None if ms is None else ms < 100)} |"
    )
    demo = imports.get("_demo", {})
    first = demo.get("first_output_min_ms") if demo.get("available") else None
    w(
        f"| the demo's first output within 1 s of process start (best of {demo.get('runs', '?')}) | {_f(first, '{:.0f} ms')} (median {_f(demo.get('first_output_ms'), '{:.0f}')}) | {_verdict(None if first is None else first < 1000)} |"
    )
    for o in others:
        text = " ".join(o.get("lines", [])[-3:]) if o.get("ok") else (o.get("reason") or "")
        if o["script"] == "bench_assembler.py":
            m = re.search(r"best ([\d.]+) ms", text)
            v = float(m.group(1)) if m and o.get("ok") else None
            w(
                f"| 1 MB of tool arguments in 10,000 deltas assembled < 50 ms | {_f(v, '{:.1f} ms')} "
                f"(bench_assembler.py) | {_verdict(None if v is None else v < 50)} |"
            )
        else:
            nums = [
                float(x.replace(",", ""))
                for x in re.findall(r"([\d,]+(?:\.\d+)?) (?:chunk )?events?/s", text)
            ]
            v = min(nums) if nums and o.get("ok") else None
            w(
                f"| ≥ 20,000 chunk events/s into SQLite (group commit) | {_f(v, '{:,.0f}/s')} "
                f"({o['script']}) | {_verdict(None if v is None else v >= 20_000)} |"
            )
    w("")


def _concurrency(w: Any, by: dict[Any, Any], sz: Any) -> None:
    w(
        "## Concurrent streams in one process (one event loop, `asyncio.gather`; every stream checked)"
    )
    w("")
    w(
        "| client | streams × chunks | total chunks/s | µs CPU/chunk | x hard floor | peak RSS MiB | errors / lost |"
    )
    w("|---|---|---|---|---|---|---|")
    for step in ("conc", "conc_peer"):
        hard = by.get((step, "hard-floor-chat"))
        hard_us = hard["us_cpu_per_chunk"] if hard and _status(hard) is None else None
        for c in CLIENTS:
            r = by.get((step, c))
            if r is None:
                continue
            st = _status(r)
            size = f"{int(_arg(r, '--concurrency')):,} × {_arg(r, '--n')}" + (
                " (tool call)" if step == "conc" else ""
            )
            if st is not None:
                w(f"| {r.get('name', c)} | {size} | {st} | | | | |")
                continue
            xh = r["us_cpu_per_chunk"] / hard_us if hard_us else None
            w(
                f"| {r['name']} | {size} | {r['chunks_per_s']:,.0f} | {r['us_cpu_per_chunk']:.1f} | "
                f"{_f(xh, '{:.2f}')} | {r['maxrss_mib']:.0f} | 0 / 0 |"
            )
    w("")


def _big(w: Any, by: dict[Any, Any], sz: Any) -> None:
    rows = [(c, by[("big", c)]) for c in CLIENTS if ("big", c) in by]
    if not rows:
        return
    w(
        f"## One stream carrying a {sz.big_tb:,}-byte tool call in {sz.big_n // 5:,} deltas "
        f"({sz.big_n:,} chunks; median of {sz.big_repeat})"
    )
    w("")
    w("| client | whole stream ms (wall) | µs CPU/chunk | x floor | x hard floor |")
    w("|---|---|---|---|---|")
    for c, r in rows:
        st = _status(r)
        if st is not None:
            w(f"| {r.get('name', c)} | {st} | | | |")
            continue
        wall = sorted(r["wall_s"])[len(r["wall_s"]) // 2] * 1000
        w(
            f"| {r['name']} | {wall:.0f} | {r['us_cpu_per_chunk']:.1f} | "
            f"{_f(1.0 if c.startswith('floor') else r.get('x_floor'), '{:.2f}')} | "
            f"{_f(_xh(r, c), '{:.2f}')} |"
        )
    w("")


def _imports(w: Any, imports: dict[str, Any]) -> None:
    w(
        "## Import time (`python -X importtime` cumulative ms of the top module, best and median; "
        "the whole `python -c` process's wall and CPU ms, median; bare interpreter start "
        f"{imports.get('_interpreter_ms', 0):.0f} ms)"
    )
    w("")
    w("| module | -X importtime best · median ms | process wall ms | process CPU ms | runs |")
    w("|---|---|---|---|---|")
    for k, v in imports.items():
        if k.startswith("_"):
            continue
        if not v.get("available"):
            w(f"| {k} | not available: {v.get('reason', '')} | | | |")
        else:
            w(
                f"| {k} | {v['importtime_min_ms']:.0f} · {v['importtime_ms']:.0f} | "
                f"{v['process_wall_ms']:.0f} | {v['process_cpu_ms']:.0f} | {v['runs']} |"
            )
    w("")


def _others(w: Any, others: list[dict[str, Any]]) -> None:
    if not others:
        return
    w("## Sibling benchmarks (their own output)")
    w("")
    for o in others:
        if not o.get("available"):
            w(f"- `{o['script']}`: {o.get('reason')}")
        elif not o.get("ok"):
            w(f"- `{o['script']}`: **FAILED**: {o.get('reason')}")
        else:
            w(f"- `{o['script']}`:")
            for ln in o.get("lines", [])[-12:]:
                w(f"  - {ln}")
    w("")
