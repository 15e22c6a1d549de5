"""Shared Streamlit helpers for the workbench pages (state, caching). No SQL, no ranking."""

from __future__ import annotations

from memory_core.base.lru import Lru

#: the server-wide memo the pages share (:mod:`memory_core.base.lru`: one LRU for the product)
__all__ = ["Lru"]
