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
import functools
import hashlib
import json
import math
import operator
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from ..base.config import MemoryConfig
from ..base.fileio import stat_signature
from ..base.text import repair_surrogates

MEMORY_FILE = "MEMORY.md"
MEMORY_DIR = "memory"
SESSION_SPLIT_CHARS = 800
#: Files larger than this are skipped: a memory file of this size is almost certainly a mistake.
MAX_FILE_BYTES = 64 * 1024 * 1024
#: Transcript names (§2.2): ``<id>.jsonl`` and the archives ``<id>.jsonl.reset.<ts>`` /
#: ``<id>.jsonl.deleted.<ts>``.
SESSION_NAME_RE = re.compile(r"\.jsonl(\.(reset|deleted)\.[^/]+)?$")
#: Folder names never descended nor watched (the reference's IGNORED_MEMORY_WATCH_DIR_NAMES),
#: plus ours: the index folder (``.memory/``, our own writes) and ``.openclaw-repair``.
IGNORED_DIR_NAMES = frozenset({".git", "node_modules", ".pnpm-store", ".venv", "venv", ".tox",
                               "__pycache__", ".openclaw-repair", ".memory"})


class SourceFile(NamedTuple):
    """A file that belongs to the memory: where it is and which source it feeds.

    ``mtime_ms``, ``size`` and ``ctime_ms`` come from the one ``stat`` the listing made (``-1``
    when unknown), so the "changed?" test of a sync costs no second system call. A named tuple:
    a listing makes one per file, and a frozen dataclass costs several times more to build.
    """

    path: str  # workspace-relative, forward slashes ("../x" for extra paths outside)
    abs: str  # absolute path as listed (through any followed symlink)
    source: str  # "memory" or "sessions"
    kind: str  # "markdown" or "session"
    mtime_ms: int = -1
    size: int = -1
    ctime_ms: int = -1

    @property
    def abs_path(self) -> Path:
        return Path(self.abs)


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
    """The result of listing a workspace: the files, and what was skipped and why.

    ``unlisted`` counts the files left out for a reason worth a warning (a name that is not
    UTF-8); symlinks skipped by configuration are only warned about.
    """

    files: list[SourceFile]
    warnings: list[str] = field(default_factory=list)
    unlisted: int = 0


class SourceError(ValueError):
    """A file cannot be read as memory (binary, unreadable, too large)."""


_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` safe to print on one line: bytes that are not UTF-8 and control characters
    escaped as ``\\xNN`` (a file name may hold any byte but ``/`` and NUL)."""
    s = os.fspath(path)
    if not s.isascii():
        s = s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


def _is_text_name(name: str) -> bool:
    """True when a name decoded from the file system is valid UTF-8 (no escaped bytes)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --------------------------------------------------------------------------- what is readable

MARKDOWN_SUFFIX = ".md"
_ANY_MARKDOWN = "**/*.md"


def pattern_admits(pattern: str, rel: str) -> bool:
    """Whether a file at ``rel`` (relative to its root, forward slashes) is memory under
    ``pattern``: Markdown only (sources are Markdown, spec §2.1), then the glob pattern, which
    can only narrow the ``.md`` files, never widen to other files."""
    if not rel.endswith(MARKDOWN_SUFFIX):
        return False
    if pattern == _ANY_MARKDOWN:
        return True
    return fnmatch.fnmatchcase(rel, pattern) or (
        pattern.startswith("**/") and fnmatch.fnmatchcase(rel, pattern[3:]))


@dataclass(frozen=True)
class _ExtraRoot:
    abs: str  # absolute, normalised, as configured (``~`` expanded)
    real: str
    pattern: str | None  # None: a single configured file


class MemoryScope:
    """The one rule that decides which files are memory, for the listing and ``memory_get``.

    A file is readable memory when its path is ``MEMORY.md`` (or ``dreams.md``, which
    ``memory_get`` reads as the reference does) at the workspace root, a ``.md`` file under
    ``memory/``, a ``.md`` file under an extra-path folder that its pattern admits, or exactly a
    configured extra ``.md`` file; and its real target is a ``.md`` file too. A path through a
    symlink is readable when its real target is itself such a file, or when symlinks are
    followed (``sources.follow_symlinks``), as the listing then indexes it.
    """

    def __init__(self, workspace: Path, config: MemoryConfig):
        self.ws = os.path.abspath(workspace)
        self.ws_real = os.path.realpath(workspace)
        self.follow = config.sources.follow_symlinks
        self.extras: list[_ExtraRoot] = []
        for extra in config.sources.extra_paths:
            p = os.path.expanduser(extra.path)
            p = os.path.normpath(p if os.path.isabs(p) else os.path.join(self.ws, p))
            if os.path.isdir(p):
                self.extras.append(_ExtraRoot(p, os.path.realpath(p), extra.pattern))
            elif os.path.isfile(p):
                self.extras.append(_ExtraRoot(p, os.path.realpath(p), None))

    def _admits(self, path: str, ws: str, real: bool) -> bool:
        """The location half of the rule, on an absolute normalised path."""
        if not path.endswith(MARKDOWN_SUFFIX):
            return False
        if path.startswith(ws + os.sep):
            rel = path[len(ws) + 1:]
            if rel == MEMORY_FILE or rel.lower() == "dreams.md":
                return True
            if rel.startswith(MEMORY_DIR + os.sep):
                return True
        for root in self.extras:
            base = root.real if real else root.abs
            if root.pattern is None:
                if path == base:
                    return True
            elif path.startswith(base + os.sep) and pattern_admits(
                    root.pattern, path[len(base) + 1:].replace(os.sep, "/")):
                return True
        return False

    def readable(self, path: str) -> str | None:
        """The real path of ``path`` (absolute, or relative to the workspace) if it is readable
        memory, else ``None``."""
        p = os.path.expanduser(path)
        p = os.path.normpath(p if os.path.isabs(p) else os.path.join(self.ws, p))
        if not p.endswith(MARKDOWN_SUFFIX):
            return None
        real = os.path.realpath(p)
        if not real.endswith(MARKDOWN_SUFFIX):
            return None  # a .md name pointing at something that is not Markdown
        if self._admits(real, self.ws_real, True):
            return real
        if (real == p or self.follow) and self._admits(p, self.ws, False):
            return real
        return None


def is_readable_memory_path(workspace: Path, config: MemoryConfig, path: str) -> bool:
    """Whether ``path`` is a memory file of this workspace (see :class:`MemoryScope`)."""
    return MemoryScope(workspace, config).readable(path) is not None


def index_path_conflict(workspace: Path, config: MemoryConfig, path: Path) -> str | None:
    """Why ``path`` may not hold the index because it lies among the memory sources, or
    ``None``. The index must never overwrite (or sit among) the files it reads: a Markdown
    file anywhere, ``MEMORY.md``, anything under ``memory/``, an extra path or the sessions
    folder."""
    p = os.path.realpath(path)
    ws = os.path.realpath(workspace)
    shown = display_path(path)
    where: str | None = None
    if p.endswith(MARKDOWN_SUFFIX):
        where = "a Markdown file"
    elif _is_session_name(p):
        where = "a transcript"
    elif p == os.path.join(ws, MEMORY_FILE) or p.startswith(
            os.path.join(ws, MEMORY_DIR) + os.sep):
        where = "MEMORY.md / memory/"
    else:
        roots = [r.real for r in MemoryScope(workspace, config).extras]
        if "sessions" in config.sources.sources:
            sdir = os.path.expanduser(config.sources.sessions_dir)
            roots.append(os.path.realpath(sdir if os.path.isabs(sdir)
                                          else os.path.join(ws, sdir)))
        for root in roots:
            if p == root or p.startswith(root + os.sep):
                where = f"under {display_path(root)}"
                break
    if where is None:
        return None
    return (f"index path {shown} is inside the memory sources ({where}): the index must not "
            "overwrite or sit among the files it reads; choose another --db / [store] path")


# --------------------------------------------------------------------------- listing


@dataclass
class _Walk:
    """State of one listing: what was found, de-duplicated by real path, and the warnings."""

    follow: bool
    warnings: list[str]
    seen: set[str] = field(default_factory=set)
    unlisted: int = 0


_ENTRY_NAME = operator.attrgetter("name")
#: Whether ``os.scandir`` takes a folder's descriptor (POSIX), and how a folder is opened for it.
_SCAN_FD = os.scandir in os.supports_fd
_DIR_OPEN = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
#: A listing's order is ``(source, path)``: sorted by path, then (stably) by source, with C
#: keys (SourceFile fields 0 and 2). One ``(source, path)`` key tuple per file cost 4x the time
#: over a folder listed in its own order (~8 against ~2 ms at 10k files).
_PATH = operator.itemgetter(0)
_SOURCE = operator.itemgetter(2)


def _walk(root: str, root_real: str, admit: Callable[[str], bool],
          target_ok: Callable[[str], bool], w: _Walk, pre: str, source: str, kind: str,
          out: list[SourceFile]) -> None:
    """Append to ``out`` a :class:`SourceFile` (path ``pre`` + its path relative to ``root``)
    for each file under ``root`` that ``admit`` accepts (given its root-relative path),
    de-duplicated by real path; a followed symlink's real target must pass ``target_ok`` too (a
    ``.md`` link to a text file is not Markdown).

    Strings and ``os.scandir`` only, one ``stat`` per file, ``realpath`` only for symlinks;
    symlinked folders are followed only when asked, and a loop is cut by the folders' real
    paths. A name that is not UTF-8 is skipped with an escaped warning: it could not be stored,
    cited, or handed back to ``memory_get``.
    """
    visited = {root_real}
    # the common walk (Markdown, no link followed): the fast lane of _walk_markdown_files applies
    plain_md = admit is _is_markdown and not w.follow
    stack: list[tuple[str, str, str]] = [(root, root_real, "")]
    while stack:
        d, d_real, prefix = stack.pop()
        folder = _Folder.of(d, d_real, prefix, pre)
        listed = _list_folder(folder, w)
        if listed is None:
            continue
        fd, entries = listed
        try:
            if plain_md:
                entries = _walk_markdown_files(folder, fd, entries, w, source, kind, out)
            entries.sort(key=_ENTRY_NAME)
            subdirs = _walk_entries(folder, entries, admit, target_ok, w, visited, source, kind,
                                    out)
        finally:
            if fd is not None:
                os.close(fd)  # after the entries' stats, which are relative to it
        stack.extend(reversed(subdirs))


@dataclass(frozen=True)
class _Folder:
    """One folder of a walk: the paths its entries are built from.

    ``listed`` is the folder as the walk reached it, ``path`` the same with a trailing
    separator (the paths ``os.scandir`` gives its entries), ``real`` its real path, ``prefix``
    its path relative to the walk's root ("" or ending in "/") and ``out_prefix`` the same with
    the source's prefix in front (the start of a listed file's ``path``).
    """

    listed: str
    path: str
    real: str
    prefix: str
    out_prefix: str

    @classmethod
    def of(cls, listed: str, real: str, prefix: str, pre: str) -> _Folder:
        """The folder ``listed`` (real path ``real``) at ``prefix`` under a root listed as
        ``pre``."""
        path = listed if listed.endswith(os.sep) else listed + os.sep
        return cls(listed, path, real, prefix, pre + prefix)

    @property
    def as_listed(self) -> bool:
        """Whether the folder was reached without a link: its files' real paths are then the
        listed ones."""
        return self.real + os.sep == self.path

    def real_of(self, name: str, is_link: bool) -> str:
        """The real path of the entry ``name``: resolved for a link, else built from the
        folder's real path (no ``realpath`` call per file)."""
        return os.path.realpath(self.path + name) if is_link else self.real + os.sep + name


def _list_folder(folder: _Folder, w: _Walk) -> tuple[int | None, list[os.DirEntry[str]]] | None:
    """The folder's descriptor (``None`` where ``os.scandir`` takes none) and its entries, or
    ``None`` with a warning when it cannot be listed (the walk goes on without it).

    Listed through the folder's descriptor: each entry's stat is then an fstatat() relative to
    it, not a lookup of the whole path again (a sixth of the walk's stat time at 10k files).
    The caller closes the descriptor, after the entries' stats.
    """
    d = folder.listed
    fd: int | None = None
    try:
        fd = os.open(d, _DIR_OPEN) if _SCAN_FD else None
        return fd, list(os.scandir(d if fd is None else fd))
    except OSError as err:
        if fd is not None:
            os.close(fd)
        w.warnings.append(f"{display_path(d)}: cannot list ({err.strerror or err})")
        return None


def _walk_markdown_files(folder: _Folder, fd: int | None, entries: list[os.DirEntry[str]],
                         w: _Walk, source: str, kind: str,
                         out: list[SourceFile]) -> list[os.DirEntry[str]]:
    """The fast lane of a Markdown walk that follows no link: append each regular ``.md`` file
    with an ASCII name to ``out``, and return the other entries for :func:`_walk_entries`.

    For these files the general steps reduce to the de-duplication and the stat (a tenth of a
    no-op sync's walk). In the folder's own order: its files are sorted with the listing, and
    its stats in the order the folder stores them took a sixth less time than in name order
    (10k files). What may warn, or descend, goes through the general steps in name order, as
    before; none of it can share a real path with a file of this lane (no link is followed
    here, and names differ).
    """
    rest: list[os.DirEntry[str]] = []
    d_path, as_listed = folder.path, folder.as_listed
    for e in entries:
        name = e.name
        try:
            fast = (name.endswith(MARKDOWN_SUFFIX) and name.isascii()
                    and e.is_file(follow_symlinks=False))
        except OSError:
            fast = False  # the general steps report it
        if not fast:
            rest.append(e)
            continue
        path = d_path + name
        real = path if as_listed else folder.real_of(name, False)
        if real in w.seen:
            continue
        try:
            # a fresh stat, not the entry's cached one: 10k of those kept alive with the
            # folder's entries cost a tenth more time
            st = (os.stat(name, dir_fd=fd, follow_symlinks=False) if fd is not None
                  else e.stat())
        except OSError:
            rest.append(e)  # warned by the general steps, in name order
            continue
        w.seen.add(real)
        out.append(_source_file(folder.out_prefix + name, path, source, kind, st))
    return rest


def _walk_entries(folder: _Folder, entries: list[os.DirEntry[str]], admit: Callable[[str], bool],
                  target_ok: Callable[[str], bool], w: _Walk, visited: set[str], source: str,
                  kind: str, out: list[SourceFile]) -> list[tuple[str, str, str]]:
    """The general steps, per entry in the given (name) order: append each admitted file to
    ``out`` (:func:`_admit_file`) and return the sub-folders to descend into
    (:func:`_subfolder`), as the walk's ``(path, real path, root-relative prefix)`` items."""
    subdirs: list[tuple[str, str, str]] = []
    for e in entries:
        path = folder.path + e.name
        try:
            is_link = e.is_symlink()
            if is_link and not w.follow:
                w.warnings.append(f"{display_path(path)}: symlink skipped "
                                  "(set follow_symlinks to index it)")
                continue
            if e.is_dir():
                sub = _subfolder(folder, e.name, is_link, w, visited)
                if sub is not None:
                    subdirs.append(sub)
                continue
            if not e.is_file():
                continue
        except OSError as err:
            w.warnings.append(f"{display_path(path)}: {err.strerror or err}")
            continue
        _admit_file(folder, e, is_link, admit, target_ok, w, source, kind, out)
    return subdirs


def _subfolder(folder: _Folder, name: str, is_link: bool, w: _Walk,
               visited: set[str]) -> tuple[str, str, str] | None:
    """The walk item of the sub-folder ``name``, or ``None`` (with a warning where the user
    should know) when it is not descended: an ignored folder, a name that is not UTF-8, or a
    real path already visited (a symlink loop)."""
    path = folder.path + name
    if name in IGNORED_DIR_NAMES:
        return None
    if not _is_text_name(name):
        w.warnings.append(f"{display_path(path)}: folder name is not valid UTF-8, skipped "
                          "with its files (rename it to index it)")
        w.unlisted += 1
        return None
    real = folder.real_of(name, is_link)
    if real in visited:
        w.warnings.append(f"{display_path(path)}: symlink loop, not descended again")
        return None
    visited.add(real)
    return path, real, folder.prefix + name + "/"


def _admit_file(folder: _Folder, e: os.DirEntry[str], is_link: bool,
                admit: Callable[[str], bool], target_ok: Callable[[str], bool], w: _Walk,
                source: str, kind: str, out: list[SourceFile]) -> None:
    """Append the file entry ``e`` to ``out`` if ``admit`` accepts its root-relative path, its
    name is UTF-8, a link's target passes ``target_ok``, its real path is new, and it can be
    stat'ed; warn where the user should know why it is left out."""
    name = e.name
    path = folder.path + name
    if not admit(folder.prefix + name):
        return
    if not name.isascii() and not _is_text_name(name):
        w.warnings.append(f"{display_path(path)}: file name is not valid UTF-8, "
                          "skipped (rename it to index it)")
        w.unlisted += 1
        return
    real = folder.real_of(name, is_link)
    if is_link and not target_ok(real):
        w.warnings.append(f"{display_path(path)}: symlink to a file of another kind, skipped")
        return
    if real in w.seen:
        return
    try:
        st = e.stat()
    except OSError as err:
        w.warnings.append(f"{display_path(path)}: {err.strerror or err}")
        return
    w.seen.add(real)
    out.append(_source_file(folder.out_prefix + name, path, source, kind, st))


def _is_markdown(path: str) -> bool:
    return path.endswith(MARKDOWN_SUFFIX)


def _is_session_name(path: str) -> bool:
    return SESSION_NAME_RE.search(os.path.basename(path)) is not None


def _source_file(path: str, abs_path: str, source: str, kind: str,
                 st: os.stat_result) -> SourceFile:
    mtime_ms, size = stat_signature(st)
    return SourceFile(path, abs_path, source, kind, mtime_ms, size, int(st.st_ctime * 1000))


def list_files(workspace: Path, config: MemoryConfig) -> Listing:
    """List every file of the configured sources, de-duplicated by real path.

    Memory files are those :class:`MemoryScope` admits (the listing applies the same
    :func:`pattern_admits` and Markdown-target rule while it walks).
    """
    warnings: list[str] = []
    found: list[SourceFile] = []
    follow = config.sources.follow_symlinks
    w = _Walk(follow, warnings)
    ws = os.path.abspath(workspace)

    def prefix_of(root: str) -> str:
        if root.startswith(ws + os.sep):
            return root[len(ws) + 1:].replace(os.sep, "/") + "/"
        return Path(os.path.relpath(root, ws)).as_posix() + "/"

    def walk_root(root: str, source: str, kind: str, admit: Callable[[str], bool]) -> None:
        target_ok = _is_markdown if kind == "markdown" else _is_session_name
        if os.path.islink(root) and not follow:
            warnings.append(f"{display_path(root)}: symlink skipped")
            return
        if not os.path.isdir(root):
            return
        _walk(root, os.path.realpath(root), admit, target_ok, w, prefix_of(root), source, kind,
              found)

    def add_single(p: str, st: os.stat_result) -> None:
        real = os.path.realpath(p)
        if real in w.seen:
            return
        w.seen.add(real)
        rel = (p[len(ws) + 1:].replace(os.sep, "/") if p.startswith(ws + os.sep)
               else Path(os.path.relpath(p, ws)).as_posix())
        found.append(_source_file(rel, p, "memory", "markdown", st))

    if "memory" in config.sources.sources:
        root_md = os.path.join(ws, MEMORY_FILE)
        if os.path.islink(root_md) and not follow:
            warnings.append(f"{root_md}: symlink skipped")
        elif os.path.isfile(root_md) and os.path.realpath(root_md).endswith(MARKDOWN_SUFFIX):
            add_single(root_md, os.stat(root_md))
        walk_root(os.path.join(ws, MEMORY_DIR), "memory", "markdown", _is_markdown)
        for extra in config.sources.extra_paths:
            p = os.path.expanduser(extra.path)
            p = os.path.normpath(p if os.path.isabs(p) else os.path.join(ws, p))
            shown = display_path(p)
            if os.path.islink(p) and not follow:
                warnings.append(f"{shown}: symlinked extra path skipped")
            elif os.path.isdir(p):
                walk_root(p, "memory", "markdown",
                          functools.partial(pattern_admits, extra.pattern))
            elif os.path.isfile(p):
                if not (p.endswith(MARKDOWN_SUFFIX)
                        and os.path.realpath(p).endswith(MARKDOWN_SUFFIX)):
                    warnings.append(f"{shown}: extra path is not a .md file, skipped")
                elif not _is_text_name(p):
                    warnings.append(f"{shown}: file name is not valid UTF-8, skipped")
                    w.unlisted += 1
                else:
                    add_single(p, os.stat(p))
            else:
                warnings.append(f"{shown}: extra path does not exist")

    if "sessions" in config.sources.sources:
        sdir = os.path.expanduser(config.sources.sessions_dir)
        sdir = os.path.normpath(sdir if os.path.isabs(sdir) else os.path.join(ws, sdir))
        if config.sources.sessions_agent:
            found.extend(list_agent_sessions(sdir, config.sources.sessions_agent, w.seen))
        elif os.path.isdir(sdir):
            walk_root(sdir, "sessions", "session", _is_session_name)
    found.sort(key=_PATH)
    found.sort(key=_SOURCE)
    return Listing(found, warnings, w.unlisted)


#: ``YYYY-MM-DDTHH-MM-SS[.mmm]Z``: the time stamp of a transcript archive's name (the reference's
#: ``ARCHIVE_TIMESTAMP_RE``, ``src/config/sessions/artifacts.ts``).
_ARCHIVE_STAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d{3})?Z$")
_CHECKPOINT_RE = re.compile(r"^(.+)\.checkpoint\.([0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-"
                            r"[89ab][0-9a-f]{3}-[0-9a-f]{12})\.jsonl$", re.I)


def _archive_suffix(name: str, reason: str) -> bool:
    marker = f".{reason}."
    i = name.rfind(marker)
    return i >= 0 and _ARCHIVE_STAMP_RE.match(name[i + len(marker):]) is not None


def is_agent_transcript_name(name: str) -> bool:
    """The reference's ``isUsageCountedSessionTranscriptFileName``: a primary transcript
    ``<id>.jsonl`` (not ``sessions.json``, a ``.trajectory.jsonl``, a compaction checkpoint or
    an archive), or a ``.reset.<stamp>`` / ``.deleted.<stamp>`` archive."""
    primary = (name != "sessions.json" and name.endswith(".jsonl")
               and not name.endswith(".trajectory.jsonl") and not _CHECKPOINT_RE.match(name)
               and not re.match(r"^sessions\.json\.bak\.\d+$", name)
               and not any(_archive_suffix(name, r) for r in ("deleted", "reset", "bak")))
    return primary or _archive_suffix(name, "reset") or _archive_suffix(name, "deleted")


def list_agent_sessions(sessions_dir: str, agent: str, seen: set[str] | None = None
                        ) -> list[SourceFile]:
    """An OpenClaw agent's transcripts as ``listSessionFilesForAgent`` lists them (spec §2.2):
    the regular files (not symlinks, no recursion) of its sessions folder whose names
    :func:`is_agent_transcript_name` admits, cited ``sessions/<agent>/<file>``. A missing or
    unreadable folder lists nothing, as in the reference."""
    out: list[SourceFile] = []
    try:
        entries = sorted(os.scandir(sessions_dir), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        try:
            if e.is_symlink() or not e.is_file() or not is_agent_transcript_name(e.name):
                continue
            if not _is_text_name(e.name):
                continue
            st = e.stat()
        except OSError:
            continue
        real = os.path.realpath(e.path)
        if seen is not None:
            if real in seen:
                continue
            seen.add(real)
        out.append(_source_file(f"sessions/{agent}/{e.name}", e.path, "sessions", "session", st))
    return out


def _read_bytes(f: SourceFile) -> tuple[bytes, os.stat_result]:
    try:
        with open(f.abs, "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_size > MAX_FILE_BYTES:
                raise SourceError(
                    f"{f.path}: {st.st_size} bytes is over the {MAX_FILE_BYTES} limit")
            data = fh.read()
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
        rendered = render_session(text, display_path(f.path))
        return SourceDoc(f, rendered.content, rendered.hash, mtime_ms, st.st_size,
                         rendered.line_map, rendered.timestamps_ms, rendered.bad_lines,
                         warnings + rendered.warnings)
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
    warnings: list[str] = field(default_factory=list)


def _message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b["text"] for b in content if isinstance(b, dict)
                 and b.get("type") == "text" and isinstance(b.get("text"), str)]
        return "\n".join(parts)
    return ""


#: Times outside years 1..9999 (in epoch ms) are not times: ignored, as the text is not.
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999


def _timestamp_ms(value: object) -> int | None:
    """Epoch milliseconds from a transcript's ``timestamp`` (seconds or ms, or ISO 8601), or
    ``None`` for anything that is not a time: booleans, ``Infinity``/``NaN`` (which Python's JSON
    parser accepts), numbers beyond year 9999, unparsable strings."""
    ms: float
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            return None
        ms = value * 1000 if abs(value) < 1e11 else value
    elif isinstance(value, str):
        try:
            ms = datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
        except (ValueError, OverflowError, OSError):
            return None
    else:
        return None
    return int(ms) if _MIN_MS <= ms <= _MAX_MS else None


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


def render_session(raw: str, name: str = "") -> RenderedSession:
    """Render a JSONL transcript as ``User:`` / ``Assistant:`` lines with a JSONL line map.

    A line whose JSON holds a lone surrogate escape (``"\\ud83d"``: valid JSON, but no
    character, so no UTF-8) has it repaired as U+FFFD, with a warning naming ``name`` and the
    line: one such line never fails the index."""
    repaired: list[int] = []
    lines: list[str] = []
    line_map: list[int] = []
    stamps: list[int] = []
    bad = 0
    for i, row in enumerate(raw.split("\n")):
        if not row.strip():
            continue
        try:
            rec = json.loads(row)
        except (json.JSONDecodeError, RecursionError):  # too deep a nesting is a bad line too
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
        text, bad_chars = repair_surrogates(text)
        if bad_chars:
            repaired.append(i + 1)
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
    warnings = [f"{name or 'transcript'}: line{'s' if len(repaired) > 1 else ''} "
                f"{', '.join(map(str, repaired[:10]))}{' …' if len(repaired) > 10 else ''}: "
                "a lone surrogate escape (no character) replaced by U+FFFD"] if repaired else []
    return RenderedSession(content, line_map, stamps, bad, digest, warnings)
