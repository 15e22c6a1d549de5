"""Shared fixtures: copies of the demo workspace (tests never write into the repo) and indexes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-workspace"
SHARED = ROOT.parent / "shared"
GOLDENS = Path(__file__).resolve().parent / "goldens"


def copy_demo(dest: Path) -> Path:
    ws = dest / "demo-workspace"
    shutil.copytree(DEMO, ws, ignore=shutil.ignore_patterns(".memory"))
    return ws


@pytest.fixture
def demo_ws(tmp_path: Path) -> Path:
    """A fresh, writable copy of the demo workspace."""
    return copy_demo(tmp_path)


@pytest.fixture(scope="session")
def indexed_demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A demo copy indexed once with the real local model (default profile), shared read-only."""
    from memory_core import MemoryIndex

    ws = copy_demo(tmp_path_factory.mktemp("indexed"))
    with MemoryIndex.open(ws) as idx:
        idx.sync()
    yield ws


@pytest.fixture(scope="session")
def indexed_demo_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The demo indexed under the reference profile (reference chunking), local model."""
    from memory_core import MemoryIndex

    ws = copy_demo(tmp_path_factory.mktemp("indexed-ref"))
    with MemoryIndex.open(ws, profile="reference") as idx:
        idx.sync()
    yield ws
