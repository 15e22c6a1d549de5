"""Transcript delta tracking (spec §3.5): re-index a growing transcript only when enough grew.

An agent appends to its transcript message by message; re-indexing it at every append would
re-chunk and re-embed the whole file each time. Per file we keep ``{last_size, pending_bytes,
pending_messages}``:

* the file grew: ``pending_bytes += size - last_size``, and while ``pending_bytes`` is still
  below ``delta_bytes`` the newlines of the appended range are counted into ``pending_messages``
  (read in 64 KiB blocks);
* the file shrank (rewritten: compacted, a message removed): it is dirty at once, since what was
  cut must stop being found. The reference only counts it again from zero (``pending_bytes +=
  size``, newlines over the file), so a cut below both thresholds kept its deleted text
  searchable until some other change synced (issue 19, item 10);
* it becomes *dirty* when either threshold is met (a threshold of 0: any change counts); the
  threshold is then subtracted from the counters;
* after a sync, the counters reset to the size that was indexed (:meth:`DeltaTracker.baseline`).

Pure bookkeeping, no threads: the watcher calls :meth:`update` when its 5 s debounce fires.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_BLOCK = 64 * 1024


@dataclass
class FileDelta:
    """The counters of one transcript."""

    last_size: int = 0
    pending_bytes: int = 0
    pending_messages: int = 0


def count_newlines(path: Path, start: int, end: int) -> int:
    """Newline bytes in ``[start, end)`` of ``path`` (0 if it cannot be read)."""
    n = 0
    try:
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start
            while left > 0:
                block = f.read(min(_BLOCK, left))
                if not block:
                    break
                n += block.count(b"\n")
                left -= len(block)
    except OSError:
        return 0
    return n


class DeltaTracker:
    """Decides when a transcript has grown enough to be re-indexed."""

    def __init__(self, delta_bytes: int = 100_000, delta_messages: int = 50):
        self.delta_bytes = int(delta_bytes)
        self.delta_messages = int(delta_messages)
        self.files: dict[Path, FileDelta] = {}

    def baseline(self, path: Path, size: int) -> None:
        """The file was just indexed at ``size`` bytes: nothing is pending any more."""
        self.files[path] = FileDelta(last_size=size)

    def forget(self, path: Path) -> None:
        self.files.pop(path, None)

    def pending(self) -> tuple[int, int]:
        """Total (bytes, messages) appended but not yet indexed, over all transcripts."""
        return (sum(d.pending_bytes for d in self.files.values()),
                sum(d.pending_messages for d in self.files.values()))

    def update(self, path: Path) -> bool:
        """Account for the current size of ``path``; True when it is now dirty.

        A transcript that disappeared is dirty (its chunks must go).
        """
        try:
            size = os.stat(path).st_size
        except OSError:
            self.forget(path)
            return True
        d = self.files.setdefault(path, FileDelta())
        if size == d.last_size:
            return False
        if size > d.last_size:
            d.pending_bytes += size - d.last_size
            if self.delta_messages > 0 and (self.delta_bytes <= 0
                                            or d.pending_bytes < self.delta_bytes):
                d.pending_messages += count_newlines(path, d.last_size, size)
        else:  # shrank: rewritten, so its old text may be gone; re-index it now
            self.files[path] = FileDelta(last_size=size)
            return True
        d.last_size = size
        bytes_hit = (d.pending_bytes > 0 if self.delta_bytes <= 0
                     else d.pending_bytes >= self.delta_bytes)
        msgs_hit = (d.pending_messages > 0 if self.delta_messages <= 0
                    else d.pending_messages >= self.delta_messages)
        if not (bytes_hit or msgs_hit):
            return False
        d.pending_bytes = max(0, d.pending_bytes - self.delta_bytes) if self.delta_bytes > 0 else 0
        d.pending_messages = (max(0, d.pending_messages - self.delta_messages)
                              if self.delta_messages > 0 else 0)
        return True
