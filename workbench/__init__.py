"""Shared Streamlit helpers for the workbench pages (state, caching). No SQL, no ranking."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class Lru(OrderedDict[Any, Any]):
    """A memo for the whole server, shared by its sessions, of at most ``size`` values (the
    least recently used is dropped first); the value is computed outside the lock."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size, self.lock = size, threading.Lock()

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
