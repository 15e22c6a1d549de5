"""Helpers for the workbench's tests and notebooks: a private copy of the demo workspace and an
AppTest of the app wired to it (never writing into the repository's examples)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .state import DEMO, ROOT

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

APP = ROOT / "app.py"


def copy_demo(dest_dir: Path) -> Path:
    """Copy the demo workspace (without any index) to ``dest_dir/demo-workspace``; return it."""
    target = Path(dest_dir) / "demo-workspace"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".memory"))
    return target


def workbench_env(workspace: Path, cache: Path, provider: str = "none", *,
                  umap: bool = False, watch: bool = False) -> dict[str, str]:
    """The environment variables that point the app at ``workspace`` and a private cache.

    Without ``watch`` the workbench does not follow the files itself (a test decides when its
    syncs happen); a ``memory-core watch`` process's heartbeat is still shown."""
    env = {"MEMORY_WORKBENCH_WORKSPACE": str(workspace), "MEMORY_WORKBENCH_CACHE": str(cache),
           "MEMORY_WORKBENCH_PROVIDER": provider}
    if not umap:
        env["MEMORY_WORKBENCH_NO_UMAP"] = "1"
    if not watch:
        env["MEMORY_WORKBENCH_NO_WATCH"] = "1"
    return env


class OpenApp(Protocol):
    """The ``open_app`` fixture of the tests (``tests/conftest.py``): opens the app on a
    workspace, optionally on one page, and returns the AppTest."""

    def __call__(self, workspace: Path, page: str | None = None, *, provider: str = "none",
                 datasets: Path | None = None, timeout: float = 180) -> AppTest: ...
