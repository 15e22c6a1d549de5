"""File primitives: atomic replacement, JSONL lines, and "has this file changed".

The engine never writes the user's Markdown except through promotion, and everything it does
write (``MEMORY.md``, caches, coordinates, backups) goes through :func:`atomic_write`: a crash
leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO


def fsync_dir(d: Path) -> None:
    """Flush a folder's entry table (so a rename survives power loss); a no-op where unsupported."""
    try:
        fd = os.open(d, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, durable: bool = True,
                 mode: int | None = None) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder and ``os.replace``.

    A crash leaves either the old file or the new one. The old file's mode is kept; ``mode``
    sets the new file's where there is none (a temp file is created 0o600). With ``durable``
    (the default) the data and the folder entry are fsynced; caches may skip that.
    """
    path = Path(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        pass
    import tempfile  # here: with shutil, bz2, lzma and random, 4 ms a no-op index does not need

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if durable:
        fsync_dir(path.parent)


@dataclass(frozen=True)
class JsonlLine:
    """One non-blank line of a JSONL file: its 1-based number and its value, or why not."""

    line: int
    value: Any = None
    error: str | None = None


def _lines(f: BinaryIO, limit: int | None) -> Iterator[tuple[bytes, bool]]:
    """``(line, too_long)`` pairs; with ``limit``, never holds more than ``limit + 1`` bytes of a
    line: the rest of an over-long line is read and dropped in bounded pieces."""
    if limit is None:
        for raw in f:
            yield raw, False
        return
    while True:
        raw = f.readline(limit + 1)
        if not raw:
            return
        if len(raw) <= limit:
            yield raw, False
            continue
        while not raw.endswith(b"\n"):  # skip the rest of the line without keeping it
            raw = f.readline(1 << 16)
            if not raw:
                break
        yield b"", True


def iter_jsonl(path: Path, *, max_line_bytes: int | None = None) -> Iterator[JsonlLine]:
    """Read ``path`` line by line (streaming), yielding each non-blank line's JSON or its error.

    Never raises for a bad line: broken UTF-8, invalid JSON and over-long lines come back as a
    :class:`JsonlLine` with ``error`` set, so a caller can report the line and go on. With
    ``max_line_bytes`` memory stays bounded whatever the input (even ``/dev/zero``, one endless
    line). Only a file that cannot be opened raises ``OSError``.
    """
    with Path(path).open("rb") as f:
        for n, (raw, too_long) in enumerate(_lines(f, max_line_bytes), 1):
            item = jsonl_line(n, raw, too_long, max_line_bytes)
            if item is not None:
                yield item


def jsonl_line(n: int, raw: bytes, too_long: bool, max_line_bytes: int | None
               ) -> JsonlLine | None:
    """Line ``n`` of a JSONL stream as :func:`iter_jsonl` yields it (``None``: a blank line)."""
    if too_long:
        return JsonlLine(n, error=f"line longer than {max_line_bytes} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return JsonlLine(n, error=f"not UTF-8 ({e.reason} at byte {e.start})")
    if not text.strip():
        return None
    try:
        return JsonlLine(n, json.loads(text))
    except (json.JSONDecodeError, RecursionError) as e:
        return JsonlLine(n, error=f"not JSON ({e})")


def stat_signature(st: os.stat_result) -> tuple[int, int]:
    """The (mtime in ms, size) pair the index keeps per file: the cheap "changed?" test."""
    return int(st.st_mtime * 1000), st.st_size


def file_changed(mtime_ms: int, size: int, st: os.stat_result) -> bool:
    """True when a file's current ``stat`` differs from the recorded ``mtime_ms`` and ``size``."""
    return stat_signature(st) != (mtime_ms, size)


# --------------------------------------------------------------------------- shared files

class ContentChanged(OSError):
    """A file shared with another writer kept changing (or changed in a way an edit cannot be
    re-based on) while it was being rewritten: nothing was written."""


#: How many times :func:`rewrite_shared` re-reads and re-applies its edit before refusing.
REWRITE_TRIES = 8
#: How long a rewrite waits for writers still holding the replaced file open (their lines are
#: carried over into the new file as they land).
HOLDER_WAIT_S = 2.0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _holders(dev: int, ino: int) -> bool | None:
    """Whether another process holds the file ``(dev, ino)`` open (Linux ``/proc``); ``None``
    where that cannot be told."""
    me = str(os.getpid())
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit() and p != me]
    except OSError:
        return None
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if st.st_ino == ino and st.st_dev == dev:
                return True
    return False


def _carry_tail(old_fd: int, based: int, target: Path) -> int:
    """After ``target`` was replaced: lines another writer appended to the old file (it had it
    open with ``O_APPEND`` before the rename, so they land in the old inode) are appended to
    the new file, until no other process holds the old one. Returns the bytes carried."""
    import time

    st = os.fstat(old_fd)
    carried = 0
    deadline = time.monotonic() + HOLDER_WAIT_S
    blind_wait = True
    while True:
        held = _holders(st.st_dev, st.st_ino)  # before the read: a holder gone wrote before it
        tail = _read_fd_from(old_fd, based + carried)
        if tail:
            wfd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _write_all(wfd, tail)
            finally:
                os.close(wfd)
            carried += len(tail)
        if held and time.monotonic() < deadline:
            time.sleep(0.005)
        elif held is None and blind_wait:  # cannot see the holders: one grace period
            blind_wait = False
            time.sleep(0.05)
        else:
            return carried


def _read_fd_from(fd: int, pos: int) -> bytes:
    parts: list[bytes] = []
    while True:
        b = os.pread(fd, 1 << 20, pos)
        if not b:
            return b"".join(parts)
        parts.append(b)
        pos += len(b)


def rebased(base: bytes, new: bytes | None) -> Callable[[bytes], bytes | None]:
    """The edit "``base`` becomes ``new``" (``None``: no file) for :func:`rewrite_shared`,
    re-based on appends: a file that is now ``base`` plus lines another writer appended
    becomes ``new`` plus those lines; any other change raises :class:`ContentChanged`."""

    def edit(current: bytes) -> bytes | None:
        if current == base:
            return new
        if current.startswith(base):
            tail = current[len(base):]
            if new is None:
                return tail
            nl = b"\r\n" if b"\r\n" in new else b"\n"
            sep = b"" if not new or new.endswith((b"\n", b"\r")) else nl
            return new + sep + tail
        raise ContentChanged("it changed meanwhile (not only appended to)")

    return edit


def rewrite_shared(path: Path, edit: Callable[[bytes], bytes | None], *,
                   tries: int = REWRITE_TRIES) -> tuple[bytes, bytes | None]:
    """Rewrite a file that another process (the agent) may append to at the same time,
    losing none of its lines: compare and swap on the content.

    ``edit`` maps the file's current bytes (``b""`` when missing) to the new bytes (``None``:
    remove the file); it may raise :class:`ContentChanged` to refuse. A symlink is written
    through to its target. The file is read, edited, and just before the swap read again: if
    it changed, the edit is re-applied to what it holds now (``tries`` times, then
    :class:`ContentChanged`). The new file is a temp file renamed over the target (a crash
    leaves the old file or the new one); what was appended to the old file since it was read,
    before the rename or after it by a writer that still had it open, is carried over to the
    end of the new one. Returns ``(based_on, written)``.
    """
    target = Path(os.path.realpath(path))
    for _ in range(max(1, tries)):
        try:
            fd: int | None = os.open(target, os.O_RDONLY)
        except FileNotFoundError:
            fd = None
        try:
            base = b"" if fd is None else _read_fd_from(fd, 0)
            new = edit(base)
            if new == base or (new is None and fd is None):
                return base, new
            if _swap(fd, target, base, new):
                return base, new
        finally:
            if fd is not None:
                os.close(fd)
    raise ContentChanged(f"{Path(path).name} kept changing while being written ({tries} "
                         "tries); nothing was written")


def _same(fd: int | None, target: Path, base: bytes) -> bool:
    """Whether ``target`` is still the file ``fd`` reads, holding ``base`` (and perhaps lines
    appended since, which the swap carries over)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return fd is None
    if fd is None:
        return False
    own = os.fstat(fd)
    return ((st.st_ino, st.st_dev) == (own.st_ino, own.st_dev)
            and os.pread(fd, len(base) + 1, 0)[:len(base)] == base)


def _swap(fd: int | None, target: Path, base: bytes, new: bytes | None) -> bool:
    import tempfile

    tmp = None
    if new is not None:
        mode = os.fstat(fd).st_mode & 0o7777 if fd is not None else 0o644
        tfd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(tfd, "wb") as f:
                f.write(new)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
        except BaseException:
            os.unlink(tmp)
            raise
    try:
        if not _same(fd, target, base):
            return False
        if tmp is not None and fd is None:
            try:  # creates, never replaces: a file another writer made meanwhile is kept
                os.link(tmp, target)
            except FileExistsError:
                return False
        elif tmp is not None:
            os.replace(tmp, target)
            tmp = None
        else:
            os.unlink(target)
    finally:
        if tmp is not None:
            os.unlink(tmp)
    if fd is not None:
        _carry_tail(fd, len(base), target)
    fsync_dir(target.parent)
    return True
