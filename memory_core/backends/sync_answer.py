"""What one sync did, in the backend face's shape: a module of its own, so that a no-op
``memory-core index`` answers through the face without loading the protocol's other classes
(and :mod:`memory_core.status` under them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class BackendSync:
    """What one sync did, whichever backend ran it: ``report`` as JSON, ``summary`` lines for a
    person, and ``warnings`` (one line each)."""

    report: dict[str, Any]
    summary: list[str]
    warnings: list[str] = field(default_factory=list)


__all__ = ["BackendSync"]
