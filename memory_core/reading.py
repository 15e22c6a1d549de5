"""``memory_get``: exact lines from a memory file, refusing anything else (spec §5).

Allowed: ``MEMORY.md``, ``dreams.md`` and ``memory/**`` inside the workspace, and files inside a
configured extra-path folder (or exactly a configured extra ``.md`` file). Always ``.md``. The
real path must stay inside the allowed root, so ``..`` and symlinks cannot escape it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .config import MemoryConfig
from .sources import is_memory_path

DEFAULT_LINES = 120
DEFAULT_MAX_CHARS = 12_000


class PathRefused(ValueError):
    """The path is not a memory file this workspace may read."""


@dataclass
class ReadResult:
    path: str
    text: str
    from_line: int
    lines: int
    truncated: bool = False
    next_from: int | None = None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"path": self.path, "text": self.text, "from": self.from_line,
                                "lines": self.lines}
        if self.truncated:
            d["truncated"] = True
        if self.next_from is not None:
            d["nextFrom"] = self.next_from
        return d


def _inside(child: str, root: str) -> bool:
    return child == root or child.startswith(root.rstrip(os.sep) + os.sep)


def resolve_memory_path(workspace: Path, config: MemoryConfig, path: str) -> Path:
    """The real file ``path`` names, or :class:`PathRefused` with the reason."""
    p = (path or "").strip()
    if not p:
        raise PathRefused("path required")
    if not p.lower().endswith(".md"):
        raise PathRefused(f"{p}: only .md memory files can be read")
    ws_real = os.path.realpath(workspace)
    candidate = Path(os.path.expanduser(p))
    if not candidate.is_absolute():
        candidate = workspace / candidate
    real = os.path.realpath(candidate)
    if _inside(real, ws_real):
        rel = Path(os.path.relpath(real, ws_real)).as_posix()
        if is_memory_path(rel):
            return Path(real)
    for extra in config.sources.extra_paths:
        root = Path(os.path.expanduser(extra.path))
        if not root.is_absolute():
            root = workspace / root
        root_real = os.path.realpath(root)
        if root.is_dir() and _inside(real, root_real) and real != root_real:
            return Path(real)
        if root.is_file() and real == root_real:
            return Path(real)
    raise PathRefused(f"{p}: not a memory file of this workspace (MEMORY.md, memory/**, or a "
                      "configured extra path)")


def read_lines(workspace: Path, config: MemoryConfig, path: str, from_line: int | None = None,
               lines: int | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> ReadResult:
    """Read ``lines`` lines from ``from_line`` (1-based); a missing file gives empty text."""
    real = resolve_memory_path(workspace, config, path)
    start = max(1, int(from_line or 1))
    count = max(1, int(lines or DEFAULT_LINES))
    try:
        content = real.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return ReadResult(path, "", start, 0)
    except OSError as e:
        raise PathRefused(f"{path}: cannot read ({e.strerror or e})") from e
    all_lines = content.split("\n")
    window = all_lines[start - 1 : start - 1 + count]
    more_after = start - 1 + count < len(all_lines)
    truncated = False
    while len(window) > 1 and len("\n".join(window)) > max_chars:
        window.pop()
        truncated = True
    text = "\n".join(window)
    if len(text) > max_chars:  # one line alone is too long: hard cut, no nextFrom
        return ReadResult(path, text[:max_chars] + "\n\n[Truncated: the line exceeded the "
                          "default maxChars budget. Use the read tool for the full line.]",
                          start, 1, True, None)
    n = len(window)
    if truncated or more_after:
        nxt = start + n
        if truncated:
            text += f"\n\n[More content available. Use from={nxt} to continue.]"
        return ReadResult(path, text, start, n, truncated, nxt)
    return ReadResult(path, text, start, n)
