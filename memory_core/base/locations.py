"""Where things live outside the project: the evaluation data and the caches.

``$MEMORY_WORKBENCH_DATASETS`` overrides the data folder (default ``../shared/datasets`` beside
the project); ``$MEMORY_WORKBENCH_CACHE`` the cache root (default ``~/.cache/memory-workbench``).
Generated workspaces, evaluation indexes and map coordinates live under the cache root, never
inside the project.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

#: The repository root (this file is ``memory_core/base/locations.py``).
REPO_ROOT = Path(__file__).resolve().parents[2]


def datasets_dir() -> Path:
    """The labelled evaluation data (licensed for evaluation only; never copied here)."""
    env = os.environ.get("MEMORY_WORKBENCH_DATASETS")
    return Path(env) if env else (REPO_ROOT / ".." / "shared" / "datasets").resolve()


def cache_root() -> Path:
    """The cache root shared by the evaluator and the workbench."""
    env = os.environ.get("MEMORY_WORKBENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "memory-workbench"


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment (``default`` when unset or not a number)."""
    raw = os.environ.get(name)
    if raw is not None:
        with contextlib.suppress(ValueError):
            return int(raw)
    return default
