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


#: System trees no workspace may be in: the index (``<workspace>/.memory/``) would be written
#: into them.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
                "/sbin", "/sys", "/usr", "/System")
#: Folders that may hold workspaces but are none themselves (``/tmp``, ``/home``, ``/var`` …).
SHARED_ROOTS = ("/home", "/media", "/mnt", "/opt", "/private", "/run", "/srv", "/tmp", "/Users",
                "/var", "/Library", "/Volumes", "/var/tmp", "/dev/shm", "/private/tmp",
                "/private/var/tmp")


def unsafe_workspace(path: Path) -> str | None:
    """Why ``path`` (resolved) cannot be an agent's workspace, or ``None`` when it can.

    ``-w`` and ``openclaw.json`` are the user's text: ``/etc`` (or ``/``, ``~``, ``/tmp``)
    would make every command create ``.memory/`` there, so the file-system root, the user's home
    folder (and the folders above it), a system tree and a shared root are refused.
    """
    p = path.resolve()
    home = Path.home().resolve()
    if p == Path(p.anchor):
        return "the file-system root"
    if p == home or p in home.parents:
        return "the home folder" if p == home else "a folder above the home folder"
    for tree in SYSTEM_TREES:
        if p == Path(tree) or Path(tree) in p.parents:
            return f"inside the system folder {tree}"
    # $TMPDIR too (tempfile's order, without importing it: ``random`` at every start)
    temp = {os.path.realpath(os.environ[v]) for v in ("TMPDIR", "TEMP", "TMP")
            if os.environ.get(v)}
    if str(p) in SHARED_ROOTS or str(p) in temp:
        return "a shared system folder"
    return None
