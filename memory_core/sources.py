"""Sources: which files make up an agent's memory, and what text each one contributes.

Memory files (source ``memory``): ``MEMORY.md`` at the workspace root, every ``*.md`` under
``memory/``, and the configured extra paths (folders walked with a glob pattern, or single files).
Session transcripts (source ``sessions``): JSONL files rendered to ``User:`` / ``Assistant:`` lines
with a map from each rendered line back to its JSONL line (spec §2.2).

Nothing here writes: a file that cannot be used (binary, unreadable, a symlink loop) is skipped
with a warning that status shows, and broken UTF-8 is decoded with replacement characters.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .common.fileio import stat_signature
from .config import MemoryConfig

MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
SESSION_SPLIT_CHARS = 800
#: Files larger than this are skipped: a memory file of this size is almost certainly a mistake.
MAX_FILE_BYTES = 64 * 1024 * 1024
_SESSION_NAME_RE = re.compile(r"\.jsonl(\.(reset|deleted)\.[^/]+)?$")
_WATCH_IGNORED = {".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox", "__pycache__",
                  ".openclaw-repair", ".memory"}


@dataclass(frozen=True)
class SourceFile:
    """A file that belongs to the memory: where it is and which source it feeds."""

    path: str  # workspace-relative, forward slashes ("../x" for extra paths outside)
    abs_path: Path
    source: str  # "memory" or "sessions"
    kind: str  # "markdown" or "session"


@dataclass
class SourceDoc:
    """The text a file contributes to the index, ready for chunking."""

    file: SourceFile
    text: str
    hash: str
    mtime_ms: int
    size: int
    line_map: list[int] | None = None  # rendered line → JSONL line, for transcripts
    timestamps_ms: list[int] | None = None
    bad_lines: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.file.path

    @property
    def source(self) -> str:
        return self.file.source


@dataclass
class Listing:
    """The result of listing a workspace: the files, and what was skipped and why."""

    files: list[SourceFile]
    warnings: list[str] = field(default_factory=list)


class SourceError(ValueError):
    """A file cannot be read as memory (binary, unreadable, too large)."""


def rel_path(workspace: Path, p: Path) -> str:
    """Workspace-relative path with forward slashes; ``../`` for paths outside the workspace."""
    return Path(os.path.relpath(p, workspace)).as_posix()


def _walk(root: Path, pattern: str, follow: bool, warnings: list[str]) -> Iterator[Path]:
    """Files under ``root`` matching ``pattern``, safe against symlink loops."""
    visited: set[str] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            real = os.path.realpath(d)
        except OSError as e:  # pragma: no cover - realpath rarely fails
            warnings.append(f"{d}: {e}")
            continue
        if real in visited:
            warnings.append(f"{d}: symlink loop, not descended again")
            continue
        visited.add(real)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            warnings.append(f"{d}: cannot list ({e.strerror or e})")
            continue
        subdirs = []
        for e in entries:
            is_link = e.is_symlink()
            if is_link and not follow:
                warnings.append(f"{e.path}: symlink skipped (set follow_symlinks to index it)")
                continue
            try:
                if e.is_dir():
                    if e.name not in _WATCH_IGNORED:
                        subdirs.append(Path(e.path))
                    continue
                if not e.is_file():
                    continue
            except OSError as err:
                warnings.append(f"{e.path}: {err.strerror or err}")
                continue
            rel = Path(e.path).relative_to(root).as_posix()
            if fnmatch.fnmatch(rel, pattern) or (
                pattern.startswith("**/") and fnmatch.fnmatch(rel, pattern[3:])
            ):
                yield Path(e.path)
        stack.extend(reversed(subdirs))


def list_files(workspace: Path, config: MemoryConfig) -> Listing:
    """List every file of the configured sources, de-duplicated by real path."""
    warnings: list[str] = []
    found: list[SourceFile] = []
    seen: set[str] = set()
    follow = config.sources.follow_symlinks

    def add(p: Path, source: str, kind: str) -> None:
        real = os.path.realpath(p)
        if real in seen:
            return
        seen.add(real)
        found.append(SourceFile(rel_path(workspace, p), p, source, kind))

    if "memory" in config.sources.sources:
        root_md = workspace / MEMORY_FILE
        if root_md.is_symlink() and not follow:
            warnings.append(f"{root_md}: symlink skipped")
        elif root_md.is_file():
            add(root_md, "memory", "markdown")
        mem_dir = workspace / MEMORY_DIR
        if mem_dir.is_symlink() and not follow:
            warnings.append(f"{mem_dir}: symlink skipped")
        elif mem_dir.is_dir():
            for p in _walk(mem_dir, "**/*.md", follow, warnings):
                add(p, "memory", "markdown")
        for extra in config.sources.extra_paths:
            p = Path(os.path.expanduser(extra.path))
            if not p.is_absolute():
                p = workspace / p
            if p.is_symlink() and not follow:
                warnings.append(f"{p}: symlinked extra path skipped")
            elif p.is_dir():
                for f in _walk(p, extra.pattern, follow, warnings):
                    add(f, "memory", "markdown")
            elif p.is_file():
                if p.suffix.lower() == ".md":
                    add(p, "memory", "markdown")
                else:
                    warnings.append(f"{p}: extra path is not a .md file, skipped")
            else:
                warnings.append(f"{p}: extra path does not exist")

    if "sessions" in config.sources.sources:
        sdir = Path(os.path.expanduser(config.sources.sessions_dir))
        if not sdir.is_absolute():
            sdir = workspace / sdir
        if sdir.is_dir():
            for p in _walk(sdir, "**/*", follow, warnings):
                if _SESSION_NAME_RE.search(p.name):
                    add(p, "sessions", "session")
    found.sort(key=lambda f: (f.source, f.path))
    return Listing(found, warnings)


def _read_bytes(f: SourceFile) -> tuple[bytes, os.stat_result]:
    try:
        st = f.abs_path.stat()
        if st.st_size > MAX_FILE_BYTES:
            raise SourceError(f"{f.path}: {st.st_size} bytes is over the {MAX_FILE_BYTES} limit")
        data = f.abs_path.read_bytes()
    except OSError as e:
        raise SourceError(f"{f.path}: cannot read ({e.strerror or e})") from e
    return data, st


def _decode(f: SourceFile, data: bytes, warnings: list[str]) -> str:
    if b"\x00" in data[:8192]:
        raise SourceError(f"{f.path}: looks binary (NUL byte), skipped")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        warnings.append(f"{f.path}: invalid UTF-8 at byte {e.start}, decoded with replacement")
        return data.decode("utf-8", "replace")


def load(f: SourceFile) -> SourceDoc:
    """Read one file into the text it contributes. Raises :class:`SourceError` if unusable."""
    data, st = _read_bytes(f)
    warnings: list[str] = []
    text = _decode(f, data, warnings)
    mtime_ms, _ = stat_signature(st)  # the same (mtime, size) the "changed?" test compares
    if f.kind == "session":
        rendered = render_session(text)
        return SourceDoc(f, rendered.content, rendered.hash, mtime_ms, st.st_size,
                         rendered.line_map, rendered.timestamps_ms, rendered.bad_lines, warnings)
    return SourceDoc(f, text, hashlib.sha256(data).hexdigest(), mtime_ms, st.st_size,
                     warnings=warnings)


# --------------------------------------------------------------------------- sessions

_WS_RE = re.compile(r"\s+")
_DROP_USER_RE = re.compile(r"^(System(?: \(untrusted\))?: \[|\[cron:)")
_HEARTBEAT_RE = re.compile(r"^(HEARTBEAT_OK|NO_REPLY)\s*$")


@dataclass
class RenderedSession:
    content: str
    line_map: list[int]
    timestamps_ms: list[int]
    bad_lines: int
    hash: str


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict)
                 and b.get("type") == "text" and isinstance(b.get("text"), str)]
        return "\n".join(parts)
    return ""


def _timestamp_ms(value: object) -> int | None:
    if isinstance(value, (int, float)):
        return int(value * 1000) if value < 1e11 else int(value)
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            return None
    return None


def split_message(text: str, limit: int = SESSION_SPLIT_CHARS) -> list[str]:
    """Split at the last space at or before ``limit`` characters (a hard cut if there is none)."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        cut = rest.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces


def render_session(raw: str) -> RenderedSession:
    """Render a JSONL transcript as ``User:`` / ``Assistant:`` lines with a JSONL line map."""
    lines: list[str] = []
    line_map: list[int] = []
    stamps: list[int] = []
    bad = 0
    for i, row in enumerate(raw.split("\n")):
        if not row.strip():
            continue
        try:
            rec = json.loads(row)
        except json.JSONDecodeError:
            bad += 1
            continue
        if not isinstance(rec, dict) or rec.get("type") != "message":
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
            continue
        role = msg["role"]
        text = _WS_RE.sub(" ", _message_text(msg.get("content"))).strip()
        if not text:
            continue
        if role == "user" and _DROP_USER_RE.match(text):
            continue
        if role == "assistant" and _HEARTBEAT_RE.match(text):
            continue
        prefix = "User: " if role == "user" else "Assistant: "
        ts = _timestamp_ms(msg.get("timestamp")) or _timestamp_ms(rec.get("timestamp"))
        for piece in split_message(text):
            lines.append(prefix + piece)
            line_map.append(i + 1)
            if ts is not None:
                stamps.append(ts)
    content = "\n".join(lines)
    digest = hashlib.sha256(
        (content + "\n" + ",".join(map(str, line_map)) + "\n" + ",".join(map(str, stamps)))
        .encode("utf-8", "replace")
    ).hexdigest()
    return RenderedSession(content, line_map, stamps, bad, digest)


def is_memory_path(rel: str) -> bool:
    """The reference's ``isMemoryPath``: ``MEMORY.md``, ``dreams.md`` or anything under memory/."""
    rel = rel.replace("\\", "/").removeprefix("./")
    return rel == MEMORY_FILE or rel.lower() == "dreams.md" or rel.startswith(MEMORY_DIR + "/")
