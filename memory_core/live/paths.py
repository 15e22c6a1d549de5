"""What the watcher watches and which events matter (spec §2.1 exclusions, §2.2 file names).

The reference watches ``MEMORY.md``, ``memory/`` and the extra paths (and the agent's sessions
folder for transcript updates). It ignores any path with a segment named ``.git``,
``node_modules``, ``.pnpm-store``, ``.venv``, ``venv``, ``.tox`` or ``__pycache__``, and files
that are not ``.md``. We also ignore the index folder (``.memory/``: our own writes) and
``.openclaw-repair`` (never indexed).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from ..base.config import MemoryConfig
from ..write.sources import IGNORED_DIR_NAMES, MEMORY_DIR, MEMORY_FILE, SESSION_NAME_RE

ARCHIVE_NAME_RE = re.compile(r"\.jsonl\.(reset|deleted)\.[^/]+$")


class EventKind(Enum):
    """What an event means for the index."""

    IGNORED = "ignored"
    MEMORY = "memory"            # a memory file or folder: debounced sync
    SESSION = "session"          # a live transcript: delta tracking
    ARCHIVE = "archive"          # a reset/deleted transcript archive: dirty at once


def _abs(workspace: Path, raw: str) -> Path:
    p = Path(os.path.expanduser(raw))
    return Path(os.path.normpath(p if p.is_absolute() else workspace / p))


@dataclass(frozen=True)
class WatchPlan:
    """The locations to follow for one workspace and its configuration."""

    workspace: Path
    memory_file: Path | None
    memory_dir: Path | None
    extra_paths: tuple[Path, ...]
    sessions_dir: Path | None

    @classmethod
    def for_config(cls, workspace: Path, config: MemoryConfig) -> WatchPlan:
        ws = Path(os.path.normpath(workspace))
        mem = "memory" in config.sources.sources
        ses = "sessions" in config.sources.sources
        return cls(
            workspace=ws,
            memory_file=ws / MEMORY_FILE if mem else None,
            memory_dir=ws / MEMORY_DIR if mem else None,
            extra_paths=tuple(_abs(ws, e.path) for e in config.sources.extra_paths) if mem
            else (),
            sessions_dir=_abs(ws, config.sources.sessions_dir) if ses else None,
        )

    def roots(self) -> list[Path]:
        """Folders to watch recursively: the workspace, plus whatever lies outside it.

        The workspace itself is watched (not only ``memory/``) so that ``MEMORY.md`` or a
        ``memory/`` folder created later, or deleted and recreated, is seen. A root outside the
        workspace that does not exist yet is watched from its nearest existing parent.
        """
        out = [self.workspace]
        outside = [p for p in (*self.extra_paths, self.sessions_dir)
                   if p is not None and not _within(p, self.workspace)]
        for p in outside:
            q = p
            while not q.exists() and q.parent != q:
                q = q.parent
            if q.is_file():
                q = q.parent
            if not any(_within(q, r) for r in out):
                out = [r for r in out if not _within(r, q)] + [q]
        return out

    def classify(self, path: Path) -> EventKind:
        """What a change at ``path`` (file or folder, existing or gone) means."""
        p = Path(os.path.normpath(path))
        if any(part in IGNORED_DIR_NAMES for part in p.parts):
            return EventKind.IGNORED
        if self.sessions_dir is not None and (p == self.sessions_dir
                                              or _within(p, self.sessions_dir)):
            if ARCHIVE_NAME_RE.search(p.name):
                return EventKind.ARCHIVE
            if SESSION_NAME_RE.search(p.name):
                return EventKind.SESSION
            # the folder itself (or a subfolder) appearing or vanishing: resync what is there
            return EventKind.ARCHIVE if not p.suffix else EventKind.IGNORED
        is_md = p.suffix.lower() == ".md"
        if self.memory_file is not None and p == self.memory_file:
            return EventKind.MEMORY
        for base in (self.memory_dir, *self.extra_paths):
            if base is None:
                continue
            if p == base:
                return EventKind.MEMORY
            if _within(p, base) and (is_md or not p.suffix):
                return EventKind.MEMORY
        return EventKind.IGNORED


def _within(p: Path, base: Path) -> bool:
    """``p`` is strictly inside ``base`` (both normalised, no filesystem access)."""
    return p != base and p.is_relative_to(base)
