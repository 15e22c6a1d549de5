"""The one least-recently-used memo: the store's reads and the workbench's results both keep
theirs in it, so that how a memo is bounded, shared and emptied is decided in one place."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Lru(OrderedDict[Any, Any]):
    """A memo of at most ``size`` values (the least recently used is dropped first) that threads
    may share (a server's sessions); the value is computed outside the lock."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size, self.lock = size, threading.Lock()
        self.stamp: Any = None

    def valid_for(self, stamp: Any) -> None:
        """Forget every value when ``stamp`` (what they were read from: an index's version,
        say) is not the one given last time."""
        with self.lock:
            if stamp != self.stamp:
                self.clear()
                self.stamp = stamp

    def get_or(self, ck: Any, compute: Callable[[], Any]) -> Any:
        """The value kept under ``ck``, or ``compute()``'s, kept."""
        with self.lock:
            if ck in self:
                self.move_to_end(ck)
                return self[ck]
        value = compute()
        with self.lock:
            self[ck] = value
            while len(self) > self.size:
                self.popitem(last=False)
        return value
