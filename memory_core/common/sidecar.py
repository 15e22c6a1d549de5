"""The file layout both search sidecars share (``<index>.vectors``, ``<index>.postings``):
8 bytes of magic, the JSON header's length (little-endian u64), the header, then arrays at
64-byte aligned offsets that the header lists, so a new process maps them with ``np.memmap``."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

ALIGN = 64
#: No header either module writes comes near this; a larger length means a damaged file.
MAX_HEADER = 1 << 20


def pad(n: int) -> int:
    """``n`` rounded up to the next :data:`ALIGN` boundary."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


def read_header(f: IO[bytes], magic: bytes) -> dict[str, Any] | None:
    """The JSON header of an open sidecar file, or ``None`` when it is not one (wrong magic,
    short, an absurd length). Raises ``ValueError`` on a header that is not JSON."""
    head = f.read(16)
    if len(head) < 16 or head[:8] != magic:
        return None
    hlen = int.from_bytes(head[8:16], "little")
    if hlen > MAX_HEADER:
        return None
    header = json.loads(f.read(hlen))
    return header if isinstance(header, dict) else None


def header_bytes(magic: bytes, header: dict[str, Any]) -> bytes:
    """What :func:`read_header` reads back: magic, length, JSON."""
    blob = json.dumps(header).encode()
    return magic + len(blob).to_bytes(8, "little") + blob


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
    the ``offsets`` and ``sizes`` of ``parts`` are added, then each part at its aligned offset.
    """
    sizes = {k: len(v) for k, v in parts.items()}
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
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
            for key, data in parts.items():
                if data:
                    f.seek(offsets[key])
                    f.write(data)
            f.truncate(pos)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
