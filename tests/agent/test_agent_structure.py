"""The shape of `modelwire.agent`: an acyclic module graph, one request-building path, no dead
members left on `Agent` from the free-function era."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

from modelwire.agent import Agent

PACKAGE = "modelwire.agent"
ROOT = Path(__file__).resolve().parents[2] / "src" / "modelwire" / "agent"


def _module(path: Path) -> str:
    return PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"


def _modules() -> dict[str, Path]:
    return {_module(path): path for path in sorted(ROOT.glob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, module: str, known: set[str]) -> set[str]:
    """The `modelwire.agent` modules one import statement names (relative ones resolved)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in known}
    if node.level:
        base = PACKAGE.split(".")[: len(PACKAGE.split(".")) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    found = {target} if target in known else set()
    # `from . import step` (or `from modelwire.agent import step`) names the submodule.
    found |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
    if found - {target}:
        found.discard(target)
    return found


def _graph() -> dict[str, set[str]]:
    """Every import of every module, wherever it stands: module level, `if TYPE_CHECKING:`,
    inside functions."""
    modules = _modules()
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                edges |= _targets(node, module, known)
        graph[module] = edges - {module}
    return graph


def test_agent_module_graph_is_acyclic() -> None:
    graph = _graph()
    assert f"{PACKAGE}.step" in graph[f"{PACKAGE}.loop"]  # the walk sees the imports at all
    try:
        order = list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        raise AssertionError(f"import cycle in {PACKAGE}: {' -> '.join(exc.args[1])}") from exc
    assert set(order) == set(graph)


def test_agent_module_graph_imports_the_loop_from_nowhere_inside_the_package() -> None:
    importers = sorted(m for m, edges in _graph().items() if f"{PACKAGE}.loop" in edges)
    assert importers == [PACKAGE]  # only the package surface


def test_agent_requests_are_prepared_by_the_step_object_only() -> None:
    """One request-building path: `prepare_call` and the seed config live in `step.py`."""
    callers = sorted(
        path.stem
        for path in ROOT.glob("*.py")
        if ".prepare_call(" in path.read_text(encoding="utf-8")
        or ".config(view.latest_header" in path.read_text(encoding="utf-8")
    )
    assert callers == ["step"]


def test_agent_dead_members_are_gone() -> None:
    for name in ("mark_requested", "first_request", "view"):
        assert not hasattr(Agent, name), name
