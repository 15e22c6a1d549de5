"""File primitives: atomic replacement, JSONL lines, and "has this file changed".

The engine never writes the user's Markdown except through promotion, and everything it does
write (``MEMORY.md``, caches, coordinates, backups) goes through :func:`atomic_write`: a crash
leaves the old file or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
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
        os.fsync(fd)
    except OSError:
        pass
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
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
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
