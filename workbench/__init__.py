"""Shared Streamlit helpers for the workbench pages (state, caching). No SQL, no ranking."""

from __future__ import annotations

from memory_core.base.lru import Lru as Lru  # the pages' server-wide memo: the product's one LRU
