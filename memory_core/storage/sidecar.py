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
    from ..base.lazy import numpy as np

from ..base.indexfiles import temp_beside

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


class BlockReader:
    """Array ``key`` of the sidecar ``checks`` describes, read by byte ranges through a file
    handle rather than its mapping (the pages read do not stay in the process's memory), each
    block checked against its checksum before any of it is used: :class:`SidecarDamaged`
    otherwise. ``None`` from :meth:`open` when the file is no longer the one mapped."""

    def __init__(self, f: IO[bytes], checks: Checks, key: str):
        self.f, self.name, self.block = f, checks.name, checks.block
        self.base, self.size = int(checks.offsets[key]), int(checks.sizes[key])
        self.crcs, self.key = checks.crcs[key], key
        self._last: tuple[int, bytes] = (-1, b"")

    @classmethod
    def open(cls, checks: Checks, key: str) -> BlockReader | None:
        try:
            f = open(checks.path, "rb")  # closed in close()
        except OSError:
            return None
        st = os.fstat(f.fileno())
        if (st.st_dev, st.st_ino, st.st_size) != (checks.ident[0], checks.ident[1],
                                                  checks.ident[3]):
            f.close()
            return None
        return cls(f, checks, key)

    def close(self) -> None:
        self.f.close()

    def _read_block(self, b: int) -> bytes:
        if self._last[0] == b:  # a row that straddles two blocks reads the first again
            return self._last[1]
        n = min(self.block, self.size - b * self.block)
        self.f.seek(self.base + b * self.block)
        data = self.f.read(n)
        if len(data) != n or zlib.crc32(data) != self.crcs[b]:
            raise SidecarDamaged(f"{self.name}: block {b} of {self.key!r} fails its checksum")
        self._last = (b, data)
        return data

    def read(self, lo: int, hi: int) -> bytes:
        """Bytes ``[lo, hi)`` of the array, from checked blocks."""
        if hi <= lo:
            return b""
        if hi > self.size:
            raise SidecarDamaged(f"{self.name}: {self.key!r} is shorter than asked")
        parts = []
        for b in range(lo // self.block, (hi - 1) // self.block + 1):
            start = b * self.block
            parts.append(memoryview(self._read_block(b))[max(lo, start) - start
                                                          : min(hi, start + self.block) - start])
        return b"".join(parts)


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


def open_mapped(path: Path, magic: bytes, stamp: str | None = None
                ) -> tuple[dict[str, Any], np.ndarray, Checks] | None:
    """``path``'s header, its bytes mapped, and their :class:`Checks`; ``None`` when it is
    absent, not of this version, its header is damaged, it was found damaged before or (given
    ``stamp``, the index's current one) it carries another stamp: it is stale."""
    try:
        with open(path, "rb") as f:
            ident = identity(os.fstat(f.fileno()))
            if ident in _damaged:
                return None
            header = read_header(f, magic)
            if header is None or (stamp is not None and header.get("stamp") != stamp):
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


def seal_now() -> int:
    """A seal for a file about to be written: now, in whole seconds (what any file system
    keeps). Taken before the rows are read, it also bounds when they were written."""
    return time.time_ns() // 10**9 * 10**9


class StreamWriter:
    """A sidecar written piece by piece, atomically: the arrays' sizes are known up front, each
    array's bytes arrive in order (:meth:`put`, any piece size) and their block checksums are
    computed as they pass, so no array need be whole in memory. The file is a temp beside
    ``path``; :meth:`finish` writes the header (format version, ``offsets``, ``sizes``, block
    checksums, the seal ``seal``: the mtime the file gets, :meth:`Checks.intact`) and
    :meth:`commit` renames it over ``path``. Left uncommitted (an error, a crash), the temp is
    removed and readers keep the old file."""

    def __init__(self, path: Path, magic: bytes, header: dict[str, Any],
                 sizes: dict[str, int], seal: int | None = None):
        self.path, self.magic, self.sizes = path, magic, dict(sizes)
        self.seal = seal_now() if seal is None else seal
        blocks = {k: -(-n // BLOCK) for k, n in self.sizes.items()}
        self.header = {**header, "version": VERSION, "block": BLOCK, "sealedNs": self.seal}
        # the header's length depends on the checksums and offsets: room for the widest ones
        widest = {**self.header, "crc": {k: [0xFFFFFFFF] * b for k, b in blocks.items()}}
        room = pad(len(json.dumps(widest)) + 64 * len(sizes) + 256)
        self.offsets: dict[str, int] = {}
        pos = 16 + room
        for key, n in self.sizes.items():
            self.offsets[key] = pos
            pos = pad(pos + n)
        self.room, self.end = room, pos
        self.done = dict.fromkeys(self.sizes, 0)
        self.crcs: dict[str, list[int]] = {k: [] for k in self.sizes}
        self._open: dict[str, int] = dict.fromkeys(self.sizes, 0)  # the running block's CRC
        self.tmp = temp_beside(path, os.getpid())
        self.f: IO[bytes] | None = open(self.tmp, "wb")  # closed in finish

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None
        with contextlib.suppress(FileNotFoundError):
            os.remove(self.tmp)  # a no-op once committed

    def put(self, key: str, data: bytes | bytearray | memoryview) -> None:
        """The next bytes of array ``key``."""
        mv = memoryview(data).cast("B")
        at = self.done[key]
        if at + len(mv) > self.sizes[key]:
            raise ValueError(f"{self.path.name}: more bytes for {key!r} than its size")
        assert self.f is not None
        self.f.seek(self.offsets[key] + at)
        self.f.write(mv)
        i, crcs, run = 0, self.crcs[key], self._open[key]
        while i < len(mv):
            take = min(BLOCK - (at + i) % BLOCK, len(mv) - i)
            run = zlib.crc32(mv[i : i + take], run)
            i += take
            if (at + i) % BLOCK == 0:
                crcs.append(run)
                run = 0
        self._open[key] = run
        self.done[key] = at + len(mv)

    def finish(self) -> Path:
        """Write the header and seal the temp file (every array must be complete); returns
        the temp's path (still to :meth:`commit`)."""
        for key, n in self.sizes.items():
            if self.done[key] != n:
                raise ValueError(f"{self.path.name}: {key!r} has {self.done[key]} of {n} bytes")
            if n % BLOCK:
                self.crcs[key].append(self._open[key])
        blob = header_bytes(self.magic, {**self.header, "crc": self.crcs,
                                         "offsets": self.offsets, "sizes": self.sizes})
        if len(blob) > 16 + self.room:
            raise ValueError(f"{self.path.name}: sidecar header too large")
        assert self.f is not None
        self.f.seek(0)
        self.f.write(blob)
        self.f.truncate(self.end)
        self.f.close()
        self.f = None
        os.utime(self.tmp, ns=(self.seal, self.seal))
        return self.tmp

    def commit(self) -> None:
        """Put the finished file in place of ``path`` (atomic)."""
        if self.f is not None:
            self.finish()
        os.replace(self.tmp, self.path)


def write_file(path: Path, magic: bytes, header: dict[str, Any],
               parts: dict[str, bytes | memoryview]) -> None:
    """Write a sidecar whose arrays are all in memory (``parts``) atomically: a
    :class:`StreamWriter` given each part whole."""
    with StreamWriter(path, magic, header, {k: len(v) for k, v in parts.items()}) as w:
        for key, data in parts.items():
            w.put(key, data)
        w.commit()
