"""Time `BlockAssembler` on 1 MB of tool-call arguments split into 10,000 deltas (target < 50 ms).

Standalone script: `python benchmarks/bench_assembler.py`. It asserts that the assembled arguments
equal the input, so a fast but wrong assembler cannot pass.
"""

from __future__ import annotations

import json
import time

from modelwire import BlockAssembler, BlockStart, Finish, ToolCallBlock, ToolCallDelta, ToolCalls

TOTAL_BYTES = 1_000_000
DELTAS = 10_000
TARGET_MS = 50.0
ROUNDS = 5


def make_arguments() -> str:
    """A 1 MB JSON object of ASCII text (one byte per character)."""
    payload = json.dumps({"data": "x" * TOTAL_BYTES})
    # Trim the padding so the document is exactly TOTAL_BYTES long and still valid JSON.
    surplus = len(payload) - TOTAL_BYTES
    return json.dumps({"data": "x" * (TOTAL_BYTES - surplus)})


def make_chunks(arguments: str) -> list[ToolCallDelta]:
    size = len(arguments) // DELTAS
    cuts = [i * size for i in range(DELTAS)] + [len(arguments)]
    return [
        ToolCallDelta(
            0, "call-1", arguments[cuts[i] : cuts[i + 1]], name="write" if i == 0 else None
        )
        for i in range(DELTAS)
    ]


def run_once(chunks: list[ToolCallDelta]) -> tuple[float, str]:
    start = time.perf_counter()
    assembler = BlockAssembler()
    push = assembler.push
    push(BlockStart(0, "tool-call"))
    for chunk in chunks:
        push(chunk)
    push(Finish(ToolCalls()))
    (block,) = assembler.blocks()
    elapsed_ms = (time.perf_counter() - start) * 1000.0
    assert isinstance(block, ToolCallBlock)
    return elapsed_ms, block.arguments


def main() -> int:
    arguments = make_arguments()
    assert len(arguments.encode()) == TOTAL_BYTES
    chunks = make_chunks(arguments)
    assert len(chunks) == DELTAS
    timings: list[float] = []
    for _ in range(ROUNDS):
        elapsed_ms, assembled = run_once(chunks)
        assert assembled == arguments, "assembled arguments differ from the input"
        timings.append(elapsed_ms)
    best = min(timings)
    print(
        f"assembler: {TOTAL_BYTES:,} bytes of tool arguments in {DELTAS:,} deltas: "
        f"best {best:.2f} ms, median {sorted(timings)[ROUNDS // 2]:.2f} ms "
        f"(target < {TARGET_MS:.0f} ms) -> {'OK' if best < TARGET_MS else 'TOO SLOW'}"
    )
    return 0 if best < TARGET_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
