"""The ``MEMORY.md`` model: markers, promoted sections, the budget, re-location, safe writes.

Pure text functions (no index, no state) plus the one place that writes ``MEMORY.md``:
:func:`write_memory`, which honours the file as the user set it up: a symlink is written
through to its target (the link is kept), and a read-only or immutable file is refused with one
line, never overwritten.
"""

from __future__ import annotations

import difflib
import errno
import fcntl
import hashlib
import math
import os
import re
import stat
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..base.fileio import ContentChanged, rewrite_shared
from ..base.text import truncate_utf16, utf16_len
from .model import MEMORY_FILE, PROMOTED_TEXT_MAX_CHARS, SECTION_TITLE, PromotionError, collapse

# --------------------------------------------------------------------------- Markdown shapes

HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
LIST_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
MARKER_RE = re.compile(r"<!--\s*openclaw-memory-promotion:(.+?)\s*-->")
PROMOTED_META_RE = re.compile(
    r"\s*\[score=\d+(?:\.\d+)? recalls=\d+ avg=\d+(?:\.\d+)? source=[^\]]*\]\s*$")
_FENCE_START = re.compile(r"<!--\s*openclaw:dreaming:(\w+):start\s*-->")
_FENCE_END = re.compile(r"<!--\s*openclaw:dreaming:(\w+):end\s*-->")
_SECTION_RE = re.compile(
    rf"^## {re.escape(SECTION_TITLE)} \((\d{{4}}-\d{{2}}-\d{{2}})\)\s*$")
_PROMOTED_BULLET_RE = re.compile(r"^- .*" + PROMOTED_META_RE.pattern.removeprefix(r"\s*"))
_TOP_HEADING_RE = re.compile(r"^#{1,2}\s")


def fenced_ranges(lines: Sequence[str]) -> list[tuple[int, int]]:
    """1-based inclusive line ranges inside ``openclaw:dreaming:*:start/end`` fences."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines, 1):
        if start is None and _FENCE_START.search(line):
            start = i
        elif start is not None and _FENCE_END.search(line):
            out.append((start, i))
            start = None
    if start is not None:
        out.append((start, len(lines)))
    return out


_CODE_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def promotion_markers(text: str) -> list[str]:
    """Keys of every ``<!-- openclaw-memory-promotion:<key> -->`` marker in ``text``, except
    those inside a fenced code block (a marker shown as an example is not a promotion)."""
    keys: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):  # not splitlines(): U+2028 or NEL ends no Markdown line
        m = _CODE_FENCE_RE.match(line)
        if m and (fence is None or m.group(1).startswith(fence)):
            fence = m.group(1)[:3] if fence is None else None
            continue
        if fence is None:
            keys += [k.group(1) for k in MARKER_RE.finditer(line)]
    return keys


# --------------------------------------------------------------------------- reading


def memory_path(workspace: Path) -> Path:
    return workspace / MEMORY_FILE


def read_memory_bytes(workspace: Path) -> bytes | None:
    """``MEMORY.md``'s bytes (through a symlink), or ``None`` when there is none."""
    try:
        return memory_path(workspace).read_bytes()
    except FileNotFoundError:
        return None


def decode_memory(data: bytes | None) -> str:
    """``MEMORY.md``'s bytes as the text a rewrite starts from (``""``: no file); a file that
    is not UTF-8 is refused with one line (:class:`PromotionError`), never rewritten."""
    try:
        return "" if data is None else data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PromotionError(f"{MEMORY_FILE} is not valid UTF-8 (byte {e.start}); refusing to "
                             "rewrite it") from e


def memory_diff(old: str, new: str) -> str:
    """The unified diff of a rewrite of ``MEMORY.md``, as previews show it."""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True),
                                        new.splitlines(keepends=True),
                                        f"a/{MEMORY_FILE}", f"b/{MEMORY_FILE}"))


def read_memory_text(workspace: Path) -> str:
    data = read_memory_bytes(workspace)
    return "" if data is None else data.decode("utf-8", "replace")


def source_lines(workspace: Path, path: str) -> tuple[str, list[str]] | None:
    """Re-read a candidate's diary: ``path``, then ``memory/<basename>`` (§6.5)."""
    for rel in (path, f"memory/{PurePosixPath(path).name}"):
        p = workspace / rel
        try:
            data = p.read_bytes()
        except OSError:
            continue
        return rel, data.decode("utf-8", "replace").split("\n")
    return None


# --------------------------------------------------------------------------- sections, budget


@dataclass(frozen=True)
class PromotedSection:
    """A ``## Promoted From Short-Term Memory (DATE)`` block: lines ``[start, end)``, 0-based."""

    day: str
    start: int
    end: int
    keys: tuple[str, ...]


def section_text(text: str) -> str:
    """A section compared as written: line ends unified, blank lines around it left out."""
    return "\n".join(line.rstrip("\r") for line in text.split("\n")).strip("\n")


@dataclass(frozen=True)
class Written:
    """What promotion itself wrote into ``MEMORY.md``, per its history: the only sections
    budget compaction may drop. ``sections``: the exact texts of the applies not undone
    (:func:`section_text`); ``legacy``: ``(day, key)`` of applies recorded before the texts
    were, whose sections are recognised by the day of their heading and their markers."""

    sections: frozenset[str] = frozenset()
    legacy: frozenset[tuple[str, str]] = frozenset()

    def wrote(self, day: str, text: str, keys: Sequence[str], *, shaped: bool) -> bool:
        """Whether promotion wrote this section: its exact text (whatever its bullets look
        like: the default profile's carry no score metadata), or, for an older row, the day and
        the keys of a section ``shaped`` like a promoted one (only markers and bullets)."""
        if section_text(text) in self.sections:
            return True
        return shaped and bool(keys) and all((day, k) in self.legacy for k in keys)


def promoted_sections(text: str, written: Written) -> list[PromotedSection]:
    """The promoted sections that may be dropped to fit the budget.

    A section runs from its heading to the next level-1/2 heading or the end of the file. Only
    sections promotion wrote (``written``: its history) and the user left as they were count:
    a section the user wrote or edited, even one shaped like a promoted one (a heading and
    markers promotion never wrote), is user text and is never dropped. A blank line right
    before the heading belongs to the section (promotion wrote it).
    """
    lines = text.splitlines(keepends=True)
    out: list[PromotedSection] = []
    i = 0
    while i < len(lines):
        m = _SECTION_RE.match(lines[i].rstrip("\r\n"))
        if not m:
            i += 1
            continue
        j = i + 1
        ok = True
        keys: list[str] = []
        while j < len(lines) and not _TOP_HEADING_RE.match(lines[j]):
            s = lines[j].rstrip("\r\n")
            mk = MARKER_RE.fullmatch(s.strip())
            if mk:
                keys.append(mk.group(1))
            elif s.strip() and not _PROMOTED_BULLET_RE.match(s):
                ok = False
            j += 1
        if written.wrote(m.group(1), "".join(lines[i:j]), keys, shaped=ok):
            start = i - 1 if i > 0 and not lines[i - 1].strip() else i
            if out and start < out[-1].end:
                start = i
            out.append(PromotedSection(m.group(1), start, j, tuple(keys)))
        i = j
    return out


def compact_for_budget(existing: str, addition: str, budget: int, written: Written
                       ) -> tuple[str, list[PromotedSection]]:
    """``compactMemoryForBudget``: drop the oldest promoted sections while over ``budget``.

    Lengths are UTF-16 units, as the reference measures. Only what promotion wrote
    (``written``) is dropped, never user text; if the result still does not fit, it is
    returned anyway (the caller writes it and warns).
    """
    dropped: list[PromotedSection] = []
    text = existing
    while utf16_len(text) + utf16_len(addition) > budget:
        secs = promoted_sections(text, written)
        if not secs:
            break
        oldest = min(secs, key=lambda s: (s.day, s.start))
        lines = text.splitlines(keepends=True)
        text = "".join(lines[: oldest.start] + lines[oldest.end :])
        dropped.append(oldest)
    return text, dropped


def bullet_text(text: str) -> str:
    """The promoted bullet's text as 2026.9 formats it (``formatPromotedSnippetForMemory``):
    whitespace collapsed, a leading list marker removed, and at most 160 "tokens" × 4 = 640
    characters, cut at the last sentence end past 55 % of that, else the last space past 65 %,
    else hard, then ``...``. A leading ``#`` is removed too (ours: a bullet starting with
    ``# 2026-…`` renders as a heading)."""
    t = re.sub(r"^[-*+] +", "", collapse(text)).strip()
    if t.startswith("#"):
        t = t.lstrip("#").lstrip()
    t = t or "(no snippet captured)"
    limit = PROMOTED_TEXT_MAX_CHARS
    if utf16_len(t) <= limit:
        return t
    hard = truncate_utf16(t, limit)
    sentence = max(hard.rfind(". "), hard.rfind("! "), hard.rfind("? "))
    word = hard.rfind(" ")
    cut = (sentence + 1 if sentence >= math.floor(limit * 0.55)
           else word if word >= math.floor(limit * 0.65) else len(hard))
    return hard[:cut].rstrip() + "..."


# --------------------------------------------------------------------------- relocation


@dataclass
class Relocation:
    """Where a snippet is now: its 1-based line range, the window text, and match quality.

    ``quality``: 3 exact, 2 the window contains the snippet, 1 the snippet contains the window
    (spec §6.5). ``loose`` is True when it matched only after undoing daily-ingestion rendering
    (heading prefix, ``"; "`` joins, list markers).
    """

    start_line: int
    end_line: int
    text: str
    quality: int
    loose: bool = False


#: A window the snippet merely contains must cover this share of the snippet: otherwise any
#: short line that survives an edit (a heading, "- ok") would "match".
MIN_CONTAINED_SHARE = 0.4


def _loose_line(line: str) -> str:
    if HEADING_RE.match(line):
        return ""
    return LIST_RE.sub("", line)


def relocate(lines: Sequence[str], snippet: str, start: int, end: int) -> Relocation | None:
    """``relocateCandidateRange``: find ``snippet`` in ``lines`` near ``start..end`` (§6.5).

    Exact at the stored range first; otherwise every window of 1…max(span+3, 8) lines is tried,
    preferring the better match quality, then the smallest start distance, then the span
    closest to the original. If nothing matches, a second, loose pass compares without the
    heading prefix and list joins that daily ingestion adds (the reference cannot, issue
    #77707). ``None`` when the snippet is gone.
    """
    target = collapse(snippet)
    if not target:
        return None
    n = len(lines)
    span = max(1, end - start + 1)
    if 1 <= start <= end <= n and collapse(" ".join(lines[start - 1 : end])) == target:
        return Relocation(start, end, target, 3)
    found = _window_search(list(lines), target, start, span)
    if found:
        return found
    loose_target = collapse(target.replace("; ", " "))
    m = re.match(r"^([^:]{1,120}):\s+(.*)$", loose_target)
    headings = {collapse(h.group(2)) for h in map(HEADING_RE.match, lines) if h}
    if m and collapse(m.group(1)) in headings:
        loose_target = m.group(2)
    found = _window_search([_loose_line(x) for x in lines], loose_target, start, span)
    if found:
        s, e = found.start_line, found.end_line
        return Relocation(s, e, collapse(" ".join(lines[s - 1 : e])), found.quality, True)
    return None


def _window_search(lines: list[str], target: str, start: int, span: int) -> Relocation | None:
    n = len(lines)
    max_w = max(span + 3, 8)
    best: tuple[tuple[int, int, int], Relocation] | None = None
    for s in range(n):
        if not lines[s].strip():
            continue  # a window starting on a blank line equals the one starting after it
        parts: list[str] = []
        for w in range(1, max_w + 1):
            if s + w > n:
                break
            parts.append(lines[s + w - 1])
            text = collapse(" ".join(parts))
            if not text:
                continue
            if text == target:
                q = 3
            elif target in text:
                q = 2
            elif text in target and len(text) >= MIN_CONTAINED_SHARE * len(target):
                q = 1
            else:
                continue
            rank = (-q, abs((s + 1) - start), abs(w - span))
            if best is None or rank < best[0]:
                best = (rank, Relocation(s + 1, s + w, text, q))
    return best[1] if best else None


# --------------------------------------------------------------------------- writing safely

_FS_IOC_GETFLAGS = 0x80086601  # Linux ioctl; other systems: the write itself is the test
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20


def _immutable(path: Path) -> bool:
    """Whether the file has the ``chattr +i`` (or ``+a``) flag; False where it cannot tell."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        buf = fcntl.ioctl(fd, _FS_IOC_GETFLAGS, struct.pack("i", 0))
        flags = struct.unpack("i", buf)[0]
        return bool(flags & (_FS_IMMUTABLE_FL | _FS_APPEND_FL))
    except OSError:
        return False
    finally:
        os.close(fd)


def write_target(path: Path) -> Path:
    """The file a write of ``path`` must replace, checked before anything is changed.

    A symlink is followed to its final target (the link stays as it is). Refused, with one
    line: a link whose target is missing or not a regular file, a file without any write bit
    (checked on the mode itself, since root ignores it), one this process may not write, and
    an immutable or append-only one. A missing ``path`` (not a link) is fine: it is created.
    """
    target = path
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.exists():
            raise PromotionError(f"{path.name} is a symlink to {target}, which does not exist; "
                                 "refusing to write through it")
    try:
        st = target.stat()
    except FileNotFoundError:
        return target
    shown = path.name if target == path else f"{path.name} (→ {target})"
    if not stat.S_ISREG(st.st_mode):
        raise PromotionError(f"{shown} is not a regular file; refusing to write it")
    if not st.st_mode & 0o222:
        raise PromotionError(f"{shown} is read-only (mode {stat.S_IMODE(st.st_mode):03o}); "
                             "make it writable (chmod u+w) to promote into it")
    if _immutable(target):
        raise PromotionError(f"{shown} is immutable or append-only (chattr +i/+a); "
                             "remove the flag (chattr -i) to promote into it")
    if not os.access(target, os.W_OK):
        raise PromotionError(f"{shown} is not writable by this user; refusing to promote")
    return target


def write_memory(path: Path, edit: Callable[[bytes], bytes | None]) -> bytes | None:
    """Rewrite ``MEMORY.md`` by ``edit`` (current bytes → new bytes; ``None``: remove it),
    honouring links, with the agent appending beside it: compare and swap on the content
    (:func:`~..common.fileio.rewrite_shared`), so lines appended meanwhile are kept. Returns
    what was written.

    Raises :class:`PromotionError` (one line) when the file is refused, changed in a way the
    edit cannot take in, or the write fails; the file is then unchanged.
    """
    write_target(path)
    try:
        return rewrite_shared(path, edit)[1]
    except ContentChanged as e:
        raise PromotionError(f"{MEMORY_FILE} changed while being written ({e}); it is "
                             "unchanged: preview again") from None
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        hint = " (immutable?)" if e.errno in (errno.EPERM, errno.EACCES) else ""
        raise PromotionError(f"{MEMORY_FILE} could not be written: {why}{hint}; "
                             "it is unchanged") from e


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def undo_edit(previous: bytes | None, section: str | None, after_sha: str
              ) -> Callable[[bytes], bytes | None]:
    """The edit that takes one promotion back out of ``MEMORY.md``, keeping what others wrote
    since: the file as the apply left it becomes ``previous``; with lines appended after it,
    ``previous`` and those lines; with the file edited elsewhere (the added block still whole,
    once, and nothing compacted by the apply), the file without that block. Anything else
    raises :class:`ContentChanged` (undoing would discard edits)."""
    prev = previous or b""

    def edit(current: bytes) -> bytes | None:
        if _sha(current) == after_sha:
            return previous
        sec = (section or "").encode("utf-8")
        if sec and current.count(sec) == 1:
            end = current.index(sec) + len(sec)
            head, tail = current[:end], current[end:]
            if _sha(head) == after_sha:  # appended to since: keep those lines
                return prev + tail if (prev or tail) else previous
            nl = b"\r\n" if b"\r\n" in sec else b"\n"
            sep = b"" if not prev or prev.endswith((b"\n", b"\r")) else nl
            if prev and _sha(prev + sep + sec) == after_sha:  # nothing compacted: cut the block
                start = end - len(sec) - len(sep)
                if current[start:end] == sep + sec:
                    return current[:start] + tail
        raise ContentChanged("it was edited since the promotion")

    return edit


_BOM = b"\xef\xbb\xbf"


def edit_markdown(path: Path, edit: Callable[[str], str]) -> None:
    """Rewrite a Markdown file the agent may be appending to (a diary, ``DREAMS.md``) by a text
    ``edit``, keeping the file as the user has it: ``edit`` sees ``\\n`` line ends and the text
    after any BOM; CRLF files are written back CRLF, a BOM is kept, a symlink is written
    through (the link stays), and lines appended meanwhile are kept
    (:func:`~..common.fileio.rewrite_shared`). A file that is not UTF-8, or keeps changing, is
    refused with one line (:class:`PromotionError`); it is then unchanged."""

    def on_bytes(data: bytes) -> bytes:
        bom = data.startswith(_BOM)
        try:
            text = data[len(_BOM) if bom else 0:].decode("utf-8")
        except UnicodeDecodeError as e:
            raise PromotionError(f"{path.name} is not UTF-8 (byte {e.start}); not rewriting it"
                                 ) from None
        crlf = "\r\n" in text
        out = edit(text.replace("\r\n", "\n") if crlf else text)
        if crlf:
            out = out.replace("\r\n", "\n").replace("\n", "\r\n")
        return (_BOM if bom else b"") + out.encode("utf-8")

    try:
        rewrite_shared(path, on_bytes)
    except ContentChanged as e:
        raise PromotionError(f"{e}") from None
    except OSError as e:
        why = os.strerror(e.errno) if e.errno else str(e)
        raise PromotionError(f"{path.name} could not be written: {why}; it is unchanged"
                             ) from e
