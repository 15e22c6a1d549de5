"""Stale lines of ``MEMORY.md``: long-term memory that a later line superseded (issue #34).

``MEMORY.md`` is loaded into every session, so a value in it that a later diary changed
("Redis maxmemory is 2gb" … "Redis maxmemory set to 4gb") is repeated as today's truth. The
index knows which lines a later one superseded (:mod:`memory_core.base.supersession`); this module
lists those of ``MEMORY.md`` with the newer line beside each, and offers the update as a
reviewable diff, written like a promotion (:func:`~.apply.write_reviewed`: backup, history,
and ``promote --undo`` reverts it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .apply import ApplyResult, write_reviewed
from .memory_file import (
    bullet_text,
    decode_memory,
    memory_diff,
    memory_path,
    read_memory_bytes,
    source_lines,
)
from .model import MEMORY_FILE, Now, PromotionError

if TYPE_CHECKING:
    from ..index import MemoryIndex

_PREFIX = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)")


@dataclass(frozen=True)
class StaleLine:
    """A ``MEMORY.md`` line (1-based) that ``superseded_by`` (``path#Ln``) replaced."""

    line: int
    text: str
    superseded_by: str
    newer_text: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "text": self.text, "supersededBy": self.superseded_by,
                "newerText": self.newer_text}


def stale_lines(index: MemoryIndex) -> list[StaleLine]:
    """The lines of ``MEMORY.md`` a later memory line superseded (the index synced first)."""
    index.ensure_synced()
    rows = [r for r in index.supersessions() if r.old_path == MEMORY_FILE]
    if not rows:
        return []
    mine = source_lines(index.workspace, MEMORY_FILE)
    lines = mine[1] if mine is not None else []
    out: list[StaleLine] = []
    for r in rows:
        newer = source_lines(index.workspace, r.new_path)
        if newer is None or not 0 < r.new_line <= len(newer[1]) or r.old_line > len(lines):
            continue
        out.append(StaleLine(r.old_line, lines[r.old_line - 1].rstrip("\r"), r.new_citation,
                             newer[1][r.new_line - 1].rstrip("\r")))
    return out


@dataclass
class UpdatePlan:
    """The update of stale lines: each replaced by its newer line's text, as a diff."""

    memory_path: Path
    old_bytes: bytes | None
    new_text: str
    diff: str
    stale: list[StaleLine]

    def to_dict(self) -> dict[str, Any]:
        return {"memoryPath": str(self.memory_path), "diff": self.diff,
                "stale": [s.to_dict() for s in self.stale]}


def updated_line(stale: StaleLine) -> str:
    """The stale line rewritten: its own bullet and indent, the newer line's words, and where
    they come from."""
    m = _PREFIX.match(stale.text)
    prefix = m.group(1) if m else "- "
    return f"{prefix}{bullet_text(stale.newer_text)} ({stale.superseded_by})"


def preview_update(index: MemoryIndex) -> UpdatePlan:
    """Plan replacing every stale line, writing nothing."""
    old = read_memory_bytes(index.workspace)
    text = decode_memory(old)
    stale = stale_lines(index)
    rows = text.split("\n")
    for s in stale:
        cr = "\r" if rows[s.line - 1].endswith("\r") else ""
        rows[s.line - 1] = updated_line(s) + cr
    new_text = "\n".join(rows)
    return UpdatePlan(memory_path(index.workspace), old, new_text, memory_diff(text, new_text),
                      stale)


def apply_update(index: MemoryIndex, plan: UpdatePlan, *, now: Now = None) -> ApplyResult:
    """Write a reviewed :class:`UpdatePlan` (refused if ``MEMORY.md`` changed since); undone by
    ``promote --undo`` / :func:`~.apply.undo` like any apply."""
    if not plan.stale:
        raise PromotionError(f"no stale line in {MEMORY_FILE}: nothing to update")
    return write_reviewed(index, plan.old_bytes, plan.new_text, plan.diff, now=now)
