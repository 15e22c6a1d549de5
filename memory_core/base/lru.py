"""The one least-recently-used memo: the store's reads and the workbench's results both keep
theirs in it, so that how a memo is bounded, shared and emptied is decided in one place."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Lru(OrderedDict[Any, Any]):
    """A memo of values weighing at most ``size`` in all (the least recently used is dropped
    first) that threads may share (a server's sessions); the value is computed outside the
    lock. ``weigh``: a value's weight (1 each: ``size`` counts values; the postings' score
    arrays weigh their bytes). A value heavier than ``size`` alone is returned, not kept."""

    def __init__(self, size: int, weigh: Callable[[Any], int] = lambda _value: 1) -> None:
        super().__init__()
        self.size, self.lock = size, threading.Lock()
        self.weigh, self.weight = weigh, 0
        self.stamp: Any = None

    def valid_for(self, stamp: Any) -> None:
        """Forget every value when ``stamp`` (what they were read from: an index's version,
        say) is not the one given last time."""
        with self.lock:
            if stamp != self.stamp:
                self.clear()
                self.weight = 0
                self.stamp = stamp

    def get_or(self, ck: Any, compute: Callable[[], Any]) -> Any:
        """The value kept under ``ck``, or ``compute()``'s, kept."""
        with self.lock:
            if ck in self:
                self.move_to_end(ck)
                return self[ck]
        value = compute()
        weight = self.weigh(value)
        if weight > self.size:
            return value
        with self.lock:
            if ck not in self:  # another thread may have kept it meanwhile
                self[ck] = value
                self.weight += weight
            while self.weight > self.size:
                self.weight -= self.weigh(self.popitem(last=False)[1])
        return value
