"""The product's Python files (what issue #32 counts: ``memory_core``, ``workbench``, ``pages``
and ``app.py``), for the tests that check a decision is spelled in one module only."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("memory_core", "workbench", "pages")


def product_files() -> list[Path]:
    """Every product source file, packages first, each package's files in path order."""
    return [p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))] + [ROOT / "app.py"]
