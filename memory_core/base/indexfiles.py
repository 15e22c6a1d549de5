"""The index's file family, named in one place: every file kept beside an index database.

For an index ``<db>`` (e.g. ``.memory/bounded-local.sqlite``):

- ``<db>-wal``, ``<db>-shm``: SQLite's own, while connections use the file in WAL mode;
- ``<db>.vectors`` and ``<db>.postings``:
  the two search sidecars (:mod:`memory_core.storage.vectors`, :mod:`memory_core.postings`);
- ``<db>.lock``: the sync lock (:mod:`memory_core.base.synclock`), never deleted;
- ``<db>.watch.json``: a live process's heartbeat (:mod:`memory_core.live.heartbeat`);
- ``<db>.owner``: the stamp naming the file's device and inode, ``<db>.damaged``: the marker a
  read that proved damage leaves (:mod:`memory_core.storage.indexfile`);
- ``<db>.tmp-<tag>``: a rebuild in progress aside; a killed one leaves it for the next sync to
  delete. A sidecar being written is ``<sidecar>.tmp-<pid>`` (:func:`temp_beside`).

``tests/test_index_files.py`` checks that no other module spells these suffixes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

_TMP = ".tmp-"


def temp_beside(path: Path, tag: object) -> Path:
    """``<path>.tmp-<tag>``: the temp file a new version of ``path`` is written to, in the same
    folder (so that ``os.replace`` onto ``path`` is atomic)."""
    return path.with_name(f"{path.name}{_TMP}{tag}")


@dataclass(frozen=True)
class IndexFiles:
    """The files of the index at ``db``: the database and its siblings."""

    db: Path

    def _beside(self, suffix: str) -> Path:
        return self.db.with_name(self.db.name + suffix)

    @property
    def wal(self) -> Path:
        return self._beside("-wal")

    @property
    def shm(self) -> Path:
        return self._beside("-shm")

    @property
    def journal(self) -> tuple[Path, Path]:
        """SQLite's WAL-mode companions (``-wal``, ``-shm``), which belong to the path, not to
        the file: a file renamed onto ``db`` would share them."""
        return self.wal, self.shm

    @property
    def vectors(self) -> Path:
        return self._beside(".vectors")

    @property
    def postings(self) -> Path:
        return self._beside(".postings")

    @property
    def lock(self) -> Path:
        return self._beside(".lock")

    @property
    def watch(self) -> Path:
        return self._beside(".watch.json")

    @property
    def owner(self) -> Path:
        return self._beside(".owner")

    @property
    def damaged(self) -> Path:
        return self._beside(".damaged")

    def tmp(self, tag: object) -> Path:
        """``<db>.tmp-<tag>``: where a rebuild builds the new index aside."""
        return temp_beside(self.db, tag)

    def temps(self) -> list[Path]:
        """The rebuilds' temp files present now (a live one, or one a killed rebuild left)."""
        return sorted(self.db.parent.glob(self.db.name + _TMP + "*"))
