"""SQL helpers shared by the index's and the state store's migrations."""

from __future__ import annotations

from typing import Any


def run_statements(db: Any, script: str) -> None:
    """Run ``;``-separated statements one by one (``executescript`` would commit midway, and a
    migration runs inside its caller's transaction)."""
    for stmt in script.split(";"):
        if stmt.strip():
            db.execute(stmt)
