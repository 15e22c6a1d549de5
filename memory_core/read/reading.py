"""``memory_get``: exact lines from a memory file, refusing anything else (spec §5).

Allowed: what :class:`memory_core.write.sources.MemoryScope` admits, the same rule the listing uses:
``MEMORY.md``, ``dreams.md`` and ``memory/**`` inside the workspace, ``.md`` files of a configured
extra-path folder that its pattern admits, or exactly a configured extra ``.md`` file. Always
``.md``, target included; ``..`` and symlinks cannot escape.

A session transcript that search cites (``sessions/<file>.jsonl#L2-L10``) is read too, by
:func:`read_rendered`: the rendered ``User:``/``Assistant:`` lines search indexed, chosen by the
JSONL line numbers the citation names (the caller has checked it is a listed transcript).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base.config import MemoryConfig
from ..write.sources import MARKDOWN_SUFFIX, MemoryScope, display_path

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
    #: ``"sessions"`` for a transcript read (its rendered lines; ``from``/``lines`` count JSONL
    #: lines); ``None`` for a Markdown file, whose shape is the reference's.
    source: str | None = None

    def to_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"path": self.path, "text": self.text, "from": self.from_line,
                                "lines": self.lines}
        if self.truncated:
            d["truncated"] = True
        if self.next_from is not None:
            d["nextFrom"] = self.next_from
        if self.source is not None:
            d["source"] = self.source
        return d


#: The longest path ``memory_get`` looks at (Linux's PATH_MAX): resolving a path costs time
#: in its length times its depth (a 1 MB path of ``a/a/…`` took 42 s of CPU), and no real
#: memory file's path comes near it.
MAX_PATH_CHARS = 4096


def capped_path(path: str) -> str:
    """``path``, or :class:`PathRefused` when it is longer than :data:`MAX_PATH_CHARS`
    (checked before any other work on it)."""
    if len(path) > MAX_PATH_CHARS:
        raise PathRefused(f"path is {len(path)} characters; at most {MAX_PATH_CHARS}")
    return path


def resolve_memory_path(workspace: Path, config: MemoryConfig, path: str) -> Path:
    """The real file ``path`` names, or :class:`PathRefused` with the reason.

    What is readable is decided by :class:`memory_core.write.sources.MemoryScope`, the rule the
    listing (and so search) applies too: a file search can cite is a file ``memory_get`` reads,
    and the other way round.
    """
    p = capped_path(path or "").strip()
    if not p:
        raise PathRefused("path required")
    if "\x00" in p:
        raise PathRefused("path contains a NUL character")
    if not p.endswith(MARKDOWN_SUFFIX):
        raise PathRefused(f"{display_path(p)}: only .md memory files can be read")
    real = MemoryScope(workspace, config).readable(p)
    if real is None:
        raise PathRefused(f"{display_path(p)}: not a memory file of this workspace (MEMORY.md, "
                          "memory/**, or a configured extra path and pattern; Markdown only)")
    return Path(real)


def fitting(lines: list[str], max_chars: int) -> int:
    """How many of ``lines``, from the first, fit in ``max_chars`` once joined by newlines
    (at least one when there is one): one pass, where dropping the last line and joining
    again until they fit was quadratic in a long read."""
    size, keep = -1, 0
    for line in lines:
        size += len(line) + 1
        if size > max_chars and keep:
            break
        keep += 1
    return keep


def line_window(from_line: int | None, lines: int | None) -> tuple[int, int]:
    """The 1-based first line and the line count a read asks for, defaults applied."""
    return max(1, int(from_line or 1)), max(1, int(lines or DEFAULT_LINES))


def file_lines(real: Path, display: str) -> list[str] | None:
    """The lines of ``real`` (bad UTF-8 replaced), ``None`` when it does not exist.

    Any other read error is :class:`PathRefused` naming ``display``, one line for the caller.
    """
    try:
        content = real.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise PathRefused(f"{display}: cannot read ({e.strerror or e})") from e
    return content.split("\n")


def read_lines(workspace: Path, config: MemoryConfig, path: str, from_line: int | None = None,
               lines: int | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> ReadResult:
    """Read ``lines`` lines from ``from_line`` (1-based); a missing file gives empty text."""
    real = resolve_memory_path(workspace, config, path)
    start, count = line_window(from_line, lines)
    all_lines = file_lines(real, path)
    if all_lines is None:
        return ReadResult(path, "", start, 0)
    window = all_lines[start - 1 : start - 1 + count]
    more_after = start - 1 + count < len(all_lines)
    keep = fitting(window, max_chars)
    truncated = keep < len(window)
    window = window[:keep]
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


def read_rendered(path: str, text: str, line_map: list[int], from_line: int | None = None,
                  lines: int | None = None, max_chars: int = DEFAULT_MAX_CHARS) -> ReadResult:
    """The rendered lines of a transcript whose JSONL lines are ``from_line`` …
    ``from_line + lines - 1``: what search indexed and cites by those numbers.

    ``lines`` in the result counts the JSONL lines the read spans; ``nextFrom`` is the JSONL
    line to continue from when more messages follow (a long read is cut at ``max_chars``).
    """
    start, count = line_window(from_line, lines)
    end = start + count - 1
    rendered = text.split("\n")[: len(line_map)]
    picked = [i for i, jl in enumerate(line_map[: len(rendered)]) if start <= jl <= end]
    kept = picked[:fitting([rendered[i] for i in picked], max_chars)]
    body = "\n".join(rendered[i] for i in kept)
    if len(body) > max_chars:  # one message line alone is too long: hard cut, no nextFrom
        return ReadResult(path, body[:max_chars] + "\n\n[Truncated: the message exceeded the "
                          "maxChars budget.]", start, 1, True, None, "sessions")
    if not kept:
        return ReadResult(path, "", start, 0, source="sessions")
    last = line_map[kept[-1]]
    truncated = len(kept) < len(picked)
    later = [jl for jl in line_map[kept[-1] + 1 :] if jl > last]
    nxt = later[0] if later and (truncated or later[0] > end) else None
    if truncated and nxt is not None:
        body += f"\n\n[More content available. Use from={nxt} to continue.]"
    return ReadResult(path, body, start, last - start + 1, truncated, nxt, "sessions")
