"""Descriptions from a function's docstring: its summary and one text per parameter.

Three styles are read, as they are commonly written:

- Google: an `Args:` (or `Arguments:`, `Parameters:`, `Keyword Args:`) section of
  `name (type): text` / `name: text` entries, continuation lines indented deeper;
- NumPy: a `Parameters` heading underlined with dashes, entries `name : type` with the text
  indented below;
- Sphinx: `:param name: text` / `:param type name: text` fields.

The description is the text before the first section or field, paragraphs kept.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["Docstring", "parse_docstring"]

_GOOGLE_PARAMS: Final = re.compile(
    r"^(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$"
)
_GOOGLE_ANY: Final = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ITEM: Final = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE: Final = re.compile(r"^-{3,}\s*$")
_NUMPY_PARAMS: Final = frozenset({"Parameters", "Other Parameters", "Keyword Arguments"})
_NUMPY_ITEM: Final = re.compile(r"^\*{0,2}(\w+)(?:\s*:.*)?$")
_SPHINX_FIELD: Final = re.compile(r"^:(\w+)(?:\s+([^:]*?))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """A parsed docstring: the description and each documented parameter's text."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())


def parse_docstring(doc: str | None) -> Docstring:
    """Parse `doc` (see the module docstring); an empty or missing docstring gives nothing."""
    lines = inspect.cleandoc(doc or "").splitlines()
    params: dict[str, str] = {}
    end = len(lines)
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if _GOOGLE_PARAMS.match(stripped) or _GOOGLE_ANY.match(stripped):
            end = min(end, i)
            i = _google(lines, i, params) if _GOOGLE_PARAMS.match(stripped) else i + 1
        elif i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()) and stripped:
            end = min(end, i)
            i = _numpy(lines, i + 2, params) if stripped in _NUMPY_PARAMS else i + 2
        elif _SPHINX_FIELD.match(stripped):
            end = min(end, i)
            i = _sphinx(lines, i, params)
        else:
            i += 1
    paragraphs = re.split(r"\n\s*\n", "\n".join(lines[:end]).strip())
    description = "\n\n".join(_join(p.splitlines()) for p in paragraphs if p.strip())
    return Docstring(description, params)


class _Entries:
    """The parameter entries of a section, each flushed into `out` when the next one starts."""

    def __init__(self, out: dict[str, str]) -> None:
        self.out = out
        self.name = ""
        self.parts: list[str] = []

    def start(self, name: str, first: str = "") -> None:
        self.flush()
        self.name, self.parts = name, [first]

    def add(self, line: str) -> None:
        if self.name:
            self.parts.append(line)

    def flush(self) -> None:
        if self.name:
            self.out[self.name] = _join(self.parts)


def _google(lines: list[str], start: int, params: dict[str, str]) -> int:
    base = _indent(lines[start])
    item: int | None = None
    entries = _Entries(params)
    i = start + 1
    while i < len(lines) and not (lines[i].strip() and _indent(lines[i]) <= base):
        line = lines[i]
        match = _GOOGLE_ITEM.match(line.strip())
        if match and (item is None or _indent(line) <= item):
            item = _indent(line)
            entries.start(match.group(1), match.group(2))
        elif line.strip():
            entries.add(line)
        i += 1
    entries.flush()
    return i


def _numpy(lines: list[str], start: int, params: dict[str, str]) -> int:
    entries = _Entries(params)
    i = start
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()) and line.strip():
            break  # the next section
        if line.strip() and _indent(line) == 0:
            match = _NUMPY_ITEM.match(line.strip())
            if match is None:
                break
            entries.start(match.group(1))
        else:
            entries.add(line)
        i += 1
    entries.flush()
    return i


def _sphinx(lines: list[str], start: int, params: dict[str, str]) -> int:
    match = _SPHINX_FIELD.match(lines[start].strip())
    assert match is not None  # the caller matched this line
    kind, target, text = match.groups()
    parts = [text]
    i = start + 1
    while i < len(lines) and lines[i].strip() and not _SPHINX_FIELD.match(lines[i].strip()):
        parts.append(lines[i])
        i += 1
    if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and target:
        params[target.split()[-1].lstrip("*")] = _join(parts)
    return i
