"""The file layout both search sidecars share (``<index>.vectors``, ``<index>.postings``):
8 bytes of magic, the JSON header's length (little-endian u64), the header, then arrays at
64-byte aligned offsets that the header lists, so a new process maps them with ``np.memmap``."""

from __future__ import annotations

import json
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
