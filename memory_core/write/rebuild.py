"""Why a sync rebuilds the whole index aside: the causes, each with its user-facing text.

A sync either updates the index in place or rebuilds it from the Markdown; the decision has a
handful of causes (:class:`RebuildCause`). Each cause's text is written here once; the sync
report (``reason``, the text; ``cause``, the stable name in ``index --json``), ``status``'s
identity and the CLI's ``index`` and ``watch`` lines all show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class RebuildCause(Enum):
    """A cause of a full rebuild; the value is its stable name (``index --json``: ``cause``)."""

    FORCED = "forced"
    NO_INDEX = "no-index"
    #: the index file could not be opened (not locked: a lock is waited for, never rebuilt)
    UNREADABLE = "unreadable"
    #: a read of this sync found the damage (the open, the meta, ``verify``, the incremental)
    DAMAGED = "damaged"
    #: an earlier read (a search's) found it and left ``<db>.damaged``
    DAMAGE_FOUND = "damage-found"
    #: what the contents depend on changed: provider, model, chunking, sources, versions…
    IDENTITY = "identity"
    #: most files changed: building again is cheaper than updating them in place
    MOSTLY_CHANGED = "mostly-changed"

    def text(self, detail: str = "") -> str:
        """The user-facing reason, with ``detail`` (the error, the changed key…) in it."""
        return _TEXT[self].format(detail=detail)


_TEXT = {
    RebuildCause.FORCED: "forced",
    RebuildCause.NO_INDEX: "no index yet",
    RebuildCause.UNREADABLE: "index unreadable, rebuilding ({detail})",
    RebuildCause.DAMAGED: "index damaged, rebuilding from the Markdown ({detail})",
    RebuildCause.DAMAGE_FOUND: "index damaged (found by an earlier read: {detail}), rebuilding",
    RebuildCause.IDENTITY: "{detail}",
    RebuildCause.MOSTLY_CHANGED: "{detail}: rebuilt aside (cheaper than updating them in place; "
                                 "cached embeddings reused)",
}


@dataclass(frozen=True)
class Rebuild:
    """A decided rebuild: its cause and the text shown for it."""

    cause: RebuildCause
    reason: str

    @classmethod
    def of(cls, cause: RebuildCause, detail: object = "") -> Rebuild:
        return cls(cause, cause.text(str(detail)))
