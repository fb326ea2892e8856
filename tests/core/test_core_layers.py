"""The layers of DESIGN §1 hold: a module imports only from its own layer or lower ones.

Checked over the `ast` of every module under `src/modelwire` (every `import` and `from … import`,
relative ones resolved, `TYPE_CHECKING` imports included: a type-only dependency is still one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "modelwire"

LAYERS = {
    "vocab": 1,
    "content": 1,
    "assembler": 2,
    "errors": 2,
    "codes": 2,
    "errortext": 2,
    "policy": 2,
    "never": 2,
    "events": 2,
    "events_approval": 2,
    "events_batch": 2,
    "events_fallback": 2,
    "events_ratelimit": 2,
    "events_retry": 2,
    "runtime": 3,
    "wire": 4,
    "adapters": 5,
    "session": 6,
    "agent": 7,
    "retry": 7,
    "meter": 7,
    "telemetry": 7,
    "workers": 7,
    "mcp": 7,
    "batch": 7,
    "cli": 8,
    "serve": 8,
    "ui": 8,
}
"""DESIGN §1, with the two helper modules placed: `content` (pure content helpers) beside the
vocabulary, `never` (assert_never, which raises a code-table error) and `codes` (the code enum,
re-exported by `errors`) beside `errors`, and `events`
(the session event structs and their codec: pure data, no I/O) there too, so adapters can read
events without importing the session log; `serve` (the gateway) is a top layer beside `cli`. The top
package (`modelwire/__init__.py`, `__main__`) is the curated surface above every layer."""

TOP = 9


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "modelwire":
        return None
    if len(parts) == 1 or parts[1] in ("__init__", "__main__"):
        return TOP
    return LAYERS.get(parts[1], -1)


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    package = module.rsplit(".", 1)[0] if not module.endswith(".__init__") else module[:-9]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append((target, node.lineno))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
    return found


def test_every_module_belongs_to_a_layer() -> None:
    unplaced = [m for m, _ in _modules() if _layer(m) == -1]
    assert unplaced == [], "place these in LAYERS (and DESIGN §1)"


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_module_imports_only_its_own_or_lower_layers(module: str, path: Path) -> None:
    own = _layer(module)
    assert own is not None
    upward = [
        f"{module}:{line} imports {target} (layer {_layer(target)} > {own})"
        for target, line in _imports(module, path)
        if (layer := _layer(target)) is not None and layer > own
    ]
    assert upward == []


MAX_LINES = 400


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_module_stays_under_400_lines(module: str, path: Path) -> None:
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines < MAX_LINES, f"{module} has {lines} lines: split it by responsibility"


ACYCLIC = ("modelwire.runtime", "modelwire.cli", "modelwire.agent")
"""Packages whose module graph must be acyclic (imports under `TYPE_CHECKING` and function-local
ones count: a cycle that only type checking or a deferred import hides is still a cycle)."""


def _graph(package: str) -> dict[str, set[str]]:
    listed = [(m, p) for m, p in _modules() if m.startswith(package)]
    modules = {m.removesuffix(".__init__") for m, _ in listed}
    graph: dict[str, set[str]] = {}
    for name, path in listed:
        module = name.removesuffix(".__init__")
        targets = set()
        for target, _ in _imports(name, path):
            for candidate in (target, target.rsplit(".", 1)[0]):
                if candidate in modules and candidate != module:
                    targets.add(candidate)
                    break
        graph[module] = targets
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


@pytest.mark.parametrize("package", ACYCLIC)
def test_package_module_graph_is_acyclic(package: str) -> None:
    graph = _graph(package)
    # the package itself re-exports its modules: that edge is not a dependency of theirs
    graph.pop(package, None)
    for targets in graph.values():
        targets.discard(package)
    assert _cycle(graph) is None
