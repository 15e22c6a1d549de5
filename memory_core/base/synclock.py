"""One sync at a time per index file, across processes (spec §3.4: "only one sync runs at a time").

SQLite's own lock only covers one transaction, so two processes syncing the same index used to
interleave their writes and the loser failed with "locked by another process". A sync now holds
an advisory ``flock`` on ``<index>.lock`` for its whole duration: a second sync *waits its turn*
(bounded, reporting how long it has waited), and a search that merely wanted to refresh the index
can ask for no wait at all and answer from the last committed state instead (§4.2, ``onSearch``).

The lock file is never deleted (deleting a lock file races with a process about to open it); it
holds the pid of the current holder, for the waiting message.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .indexfiles import IndexFiles

#: Called with (seconds waited so far, the bound) while waiting for another process's sync.
WaitProgress = Callable[[float, float], None]
#: How long a sync waits for another one by default before giving up with a clear message.
DEFAULT_WAIT_S = 600.0
_POLL_S = 0.1


class SyncLockTimeout(RuntimeError):
    """Another process held the sync lock for longer than the caller was willing to wait."""


def lock_path(index_path: Path) -> Path:
    """The lock file that guards syncs of ``index_path``."""
    return IndexFiles(index_path).lock


#: The lock file's content: the holder's pid, space-padded (read back by :func:`_holder`).
_PID_WIDTH = 20


def _holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {raw})" if raw.isdigit() else ""


@contextmanager
def sync_lock(index_path: Path, wait_s: float | None = DEFAULT_WAIT_S,
              on_wait: WaitProgress | None = None) -> Iterator[None]:
    """Hold the sync lock of ``index_path``; wait up to ``wait_s`` seconds (``None``: forever).

    ``wait_s=0`` tries once and raises :class:`SyncLockTimeout` at once if the lock is held.
    ``on_wait`` is called about once a second while waiting (never when the lock is free).
    """
    path = lock_path(index_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        start = time.monotonic()
        last_report = -1.0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                if wait_s is not None and waited >= wait_s:
                    raise SyncLockTimeout(
                        f"index {index_path} is being synced by another process{_holder(fd)}; "
                        f"gave up after waiting {waited:.0f} s") from None
                if on_wait is not None and waited - last_report >= 1.0:
                    last_report = waited
                    on_wait(waited, wait_s if wait_s is not None else float("inf"))
                time.sleep(_POLL_S)
        # over the last holder's pid, padded to a fixed width, not truncated first: ext4
        # flushes a file truncated to zero and written again when it is closed (its
        # replace-by-truncate heuristic), 1-8 ms of every sync here, for 20 bytes
        with contextlib.suppress(OSError):  # the pid is only for the waiting message
            os.pwrite(fd, f"{os.getpid():<{_PID_WIDTH}}".encode(), 0)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def sync_running(index_path: Path) -> bool:
    """Whether some sync (of this or another process) holds the lock right now."""
    try:
        fd = os.open(lock_path(index_path), os.O_RDONLY)
    except OSError:  # no lock file: no sync ever ran
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
