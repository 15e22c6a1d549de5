"""The file layout both search sidecars share (``<index>.vectors``, ``<index>.postings``):
8 bytes of magic, the JSON header's length (little-endian u64), the header, then arrays at
64-byte aligned offsets that the header lists, so a new process maps them with ``np.memmap``.

Why checksums: a sidecar only speeds up what the index answers anyway, so a damaged one must
never change a result. The header carries the format :data:`VERSION`, a CRC32 of itself and
a CRC32 per :data:`BLOCK` bytes of every array; :class:`Checks` verifies a block the first time
it is read (the vector matrix whole at its first search, a term's postings when the term is
first asked) and raises :class:`SidecarDamaged` otherwise, which the callers turn into the
index's own answer (sqlite-vec, FTS5) and the next ``index`` into a rewrite. CRC32 (zlib, in
C) reads ~3.8 GB/s here: the 133k × 384 matrix costs ~55 ms once per process
(``benchmarks/bench_sidecar.py``). A file of another version is stale, like a wrong stamp.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
else:
    from .lazy import numpy as np

from .indexfiles import temp_beside

ALIGN = 64
#: No header either module writes comes near this; a larger length means a damaged file.
MAX_HEADER = 1 << 20
#: The layout's version, in every header: 2 added the checksums. Any other is stale.
VERSION = 2
#: Bytes per checksum: small enough that a term's postings verify in well under a millisecond,
#: large enough that the header stays small (the 200 MB matrix: 800 checksums).
BLOCK = 1 << 18


#: From this many blocks to check at once, threads share them.
PARALLEL_BLOCKS = 32
_pool_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _pool_lock:
        if _executor is None:
            # imported here: concurrent.futures (and logging, 5 ms) only when a large
            # sidecar is checked, never in a no-op index
            from concurrent.futures import ThreadPoolExecutor

            _executor = ThreadPoolExecutor(min(4, os.cpu_count() or 1),
                                           thread_name_prefix="sidecar-crc")
        return _executor


class SidecarDamaged(ValueError):
    """A block of a sidecar does not match its checksum: nothing it holds may be used."""


#: Files found damaged, by ``(device, inode, mtime, size)``: not mapped again until rewritten.
_damaged: set[tuple[int, int, int, int]] = set()
_damaged_lock = threading.Lock()


def identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one written file from another (a rewrite is a new inode and mtime)."""
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)


def pad(n: int) -> int:
    """``n`` rounded up to the next :data:`ALIGN` boundary."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _header_crc(header: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps({k: v for k, v in header.items() if k != "headerCrc"},
                                 sort_keys=True).encode())


def read_header(f: IO[bytes], magic: bytes) -> dict[str, Any] | None:
    """The JSON header of an open sidecar file, or ``None`` when it is not one of this
    version (wrong magic or version, short, an absurd length, a header checksum that does not
    match). Raises ``ValueError`` on a header that is not JSON."""
    head = f.read(16)
    if len(head) < 16 or head[:8] != magic:
        return None
    hlen = int.from_bytes(head[8:16], "little")
    if hlen > MAX_HEADER:
        return None
    header = json.loads(f.read(hlen))
    if (not isinstance(header, dict) or header.get("version") != VERSION
            or header.get("headerCrc") != _header_crc(header)):
        return None
    return header


def header_bytes(magic: bytes, header: dict[str, Any]) -> bytes:
    """What :func:`read_header` reads back: magic, length, JSON (with its checksum)."""
    blob = json.dumps({**header, "headerCrc": _header_crc(header)}).encode()
    return magic + len(blob).to_bytes(8, "little") + blob


def block_crcs(data: bytes | memoryview) -> list[int]:
    """The CRC32 of each :data:`BLOCK` bytes of ``data``."""
    mv = memoryview(data)
    return [zlib.crc32(mv[i : i + BLOCK]) for i in range(0, len(mv), BLOCK)]


class Checks:
    """The lazy verification of one mapped sidecar: which blocks of which array were read and
    found good. Thread-safe enough for the MCP server's threads: a block verified twice by two
    of them costs time, never a wrong answer."""

    def __init__(self, path: Path, buf: np.ndarray, header: dict[str, Any],
                 ident: tuple[int, int, int, int]):
        self.path = path
        self.name = name = path.name
        self.buf = buf
        self.ident = ident
        self.seal_ns = header.get("sealedNs")
        self.offsets: dict[str, int] = header["offsets"]
        self.sizes: dict[str, int] = header["sizes"]
        self.crcs: dict[str, list[int]] = header["crc"]
        self.block = int(header["block"])
        if self.block <= 0 or set(self.crcs) != set(self.sizes) or any(
                len(self.crcs[k]) != -(-int(self.sizes[k]) // self.block) for k in self.sizes):
            raise SidecarDamaged(f"{name}: the checksums do not cover the arrays")
        self.good = {k: np.zeros(len(v), bool) for k, v in self.crcs.items()}

    @property
    def damaged(self) -> bool:
        """Whether this file (this very version of it) was found damaged, here or elsewhere in
        the process."""
        return self.ident in _damaged

    def verify(self, key: str, lo: int = 0, hi: int | None = None) -> None:
        """Verify the blocks of array ``key`` holding its bytes ``[lo, hi)`` (all by default)
        not verified yet; raise :class:`SidecarDamaged` on the first one that fails."""
        size = int(self.sizes[key])
        hi = size if hi is None else min(hi, size)
        if hi <= lo:
            return
        good = self.good[key]
        first, last = lo // self.block, (hi - 1) // self.block
        if good[first : last + 1].all():
            return
        base, end = int(self.offsets[key]), int(self.offsets[key]) + size
        todo = [b for b in range(first, last + 1) if not good[b]]

        def crc(b: int) -> int:
            a = base + b * self.block
            return zlib.crc32(self.buf[a : min(a + self.block, end)].data)

        # zlib lets go of the GIL: a whole matrix is read on every core there is
        got = list(_pool().map(crc, todo) if len(todo) >= PARALLEL_BLOCKS else map(crc, todo))
        for b, c in zip(todo, got, strict=True):
            if c != self.crcs[key][b]:
                with _damaged_lock:
                    _damaged.add(self.ident)
                self._set_mtime(None)  # unsealed: the next ``index`` checks it all and rewrites
                raise SidecarDamaged(f"{self.name}: block {b} of {key!r} fails its checksum")
            good[b] = True

    def verify_items(self, key: str, items: np.ndarray, itemsize: int) -> None:
        """Verify the blocks holding the items ``items`` (indexes) of array ``key``."""
        if not items.size:
            return
        blocks = np.unique(np.asarray(items, np.int64) * itemsize // self.block)
        for b in blocks.tolist():
            self.verify(key, b * self.block, (b + 1) * self.block)

    def verify_all(self) -> None:
        """Verify every array whole; raises :class:`SidecarDamaged`."""
        for key in self.sizes:
            self.verify(key)

    def written_here(self) -> None:
        """This process has just written the file from the bytes the checksums were made of:
        reading it back would only read them again from the page cache."""
        for good in self.good.values():
            good[:] = True

    def intact(self) -> bool:
        """Whether the file is good, as ``index`` and ``status`` judge it: its mtime is still
        the seal it was written with (nothing wrote it since: no need to read 300 MB on every
        no-op ``index``), or else every block checks, after which it is sealed again.

        Damage that leaves the mtime alone (bits rotting on the disk) is still caught by the
        searches, which check every block they read, and which unseal a file they find damaged.
        """
        if self.seal_ns is not None and self._same_file_mtime() == self.seal_ns:
            return True
        try:
            self.verify_all()
        except SidecarDamaged:
            return False
        self._set_mtime(self.seal_ns)
        return True

    def _same_file_mtime(self) -> int | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns if (st.st_dev, st.st_ino) == self.ident[:2] else None

    def _set_mtime(self, ns: int | None) -> None:
        """Seal (``ns``) or unseal (``None``: now) the file, if it is still the one mapped."""
        if self._same_file_mtime() is None:
            return
        with contextlib.suppress(OSError):  # not ours to touch: it is checked in full instead
            if ns is None:
                os.utime(self.path)
            else:
                os.utime(self.path, ns=(ns, ns))


def sealed(path: Path, magic: bytes, stamp: str) -> bool:
    """Whether ``path`` is a sidecar of this version carrying ``stamp`` whose mtime is still its
    seal (nothing wrote it since) and that was not found damaged: what a no-op ``index`` asks
    (:meth:`Checks.intact`'s first test), answered from the header alone, without mapping the
    file (nor importing numpy, nor verifying the per-row arrays a search verifies anyway)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if identity(st) in _damaged:
                return False
            header = read_header(f, magic)
    except (OSError, ValueError):
        return False
    return (header is not None and header.get("stamp") == stamp
            and header.get("sealedNs") is not None and st.st_mtime_ns == header["sealedNs"])


def open_mapped(path: Path, magic: bytes
                ) -> tuple[dict[str, Any], np.ndarray, Checks] | None:
    """``path``'s header, its bytes mapped, and their :class:`Checks`; ``None`` when it is
    absent, not of this version, its header is damaged or it was found damaged before."""
    try:
        with open(path, "rb") as f:
            ident = identity(os.fstat(f.fileno()))
            if ident in _damaged:
                return None
            header = read_header(f, magic)
            if header is None:
                return None
            buf = np.memmap(f, dtype=np.uint8, mode="r") if ident[3] else np.zeros(0, np.uint8)
            checks = Checks(path, buf, header, ident)
    except (OSError, ValueError, KeyError, TypeError, OverflowError):
        return None
    return header, buf, checks


def ids_at(ids: np.ndarray, rows: np.ndarray) -> list[str]:
    """The chunk ids of ``rows`` of a sidecar's fixed-width ASCII id column, gathered at once
    (one memmap item per row costs a Python call each)."""
    return [b.decode("ascii") for b in np.asarray(ids)[rows].tolist()]


def source_codes(sources: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Each row's source as a ``uint8`` code into the sorted source names."""
    names = sorted(set(sources))
    code_of = {s: i for i, s in enumerate(names)}
    return names, np.fromiter((code_of[s] for s in sources), dtype=np.uint8, count=len(sources))


def id_column(ids: Sequence[str] | Sequence[bytes]) -> tuple[int, bytes]:
    """The ids as one fixed-width ASCII column: ``(width, bytes)`` (``(0, b"")`` for none)."""
    raw = [i.encode("ascii") if isinstance(i, str) else i for i in ids]
    w = max((len(i) for i in raw), default=0)
    return w, np.array(raw, dtype=f"S{w}").tobytes() if w else b""


def write_file(path: Path, magic: bytes, header: dict[str, Any], parts: dict[str, bytes]
               ) -> None:
    """Write a sidecar atomically (a temp file renamed over ``path``): the header, to which
    the format version, the ``offsets``, ``sizes`` and block checksums of ``parts`` and the
    seal (the mtime the file gets, :meth:`Checks.intact`) are added, then each part at its
    aligned offset.
    """
    sizes = {k: len(v) for k, v in parts.items()}
    # the mtime the file is given: still that mtime later means nothing wrote it since
    seal = time.time_ns() // 10**9 * 10**9  # whole seconds: what any file system keeps
    header = {**header, "version": VERSION, "block": BLOCK, "sealedNs": seal,
              "crc": {k: block_crcs(v) for k, v in parts.items()}}
    # the header's length depends on the offsets: lay out with a generous room for it
    room = pad(len(json.dumps(header)) + 64 * len(parts) + 256)
    offsets: dict[str, int] = {}
    pos = 16 + room
    for key in parts:
        offsets[key] = pos
        pos = pad(pos + sizes[key])
    blob = header_bytes(magic, {**header, "offsets": offsets, "sizes": sizes})
    if len(blob) > 16 + room:
        raise ValueError(f"{path.name}: sidecar header too large")
    tmp = temp_beside(path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
            for key, data in parts.items():
                if data:
                    f.seek(offsets[key])
                    f.write(data)
            f.truncate(pos)
        os.utime(tmp, ns=(seal, seal))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
