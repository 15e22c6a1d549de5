"""The backend protocol as the only door of the faces (issue 20 item 1).

The CLI, the MCP server and the workbench open a backend for every request and ask what it can
do through its declared ``capabilities``; none of them tests for a missing backend or probes
attributes with ``hasattr``. The builtin engine is the default implementation; qmd that cannot
be opened answers through builtin and says why (``fallback``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.backends import ENGINE, OWN_INDEX, MemoryBackend, OpenedFallback, open_backend
from memory_core.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[1]
FACES = [ROOT / "memory_core" / "cli", ROOT / "memory_core" / "mcp", ROOT / "workbench",
         ROOT / "pages", ROOT / "app.py"]
PROBES = re.compile(r"backend is None|backend is not None|hasattr\(backend")


def _ws(tmp_path: Path, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- PG_POOL_MAX is 32.\n", encoding="utf-8")
    if toml:
        (ws / "memory-workbench.toml").write_text(toml, encoding="utf-8")
    return ws


def test_faces_never_branch_on_a_missing_backend_or_probe_it() -> None:
    found = []
    for face in FACES:
        for f in ([face] if face.is_file() else sorted(face.rglob("*.py"))):
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if PROBES.search(line):
                    found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_builtin_is_the_default_backend_and_declares_the_engine(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with MemoryIndex.open(ws, provider="none") as idx:
        b = open_backend(idx)
        assert isinstance(b, MemoryBackend) and b.kind == "builtin"
        assert ENGINE in b.capabilities and OWN_INDEX not in b.capabilities
        assert b.fallback is None
        assert [h.path for h in b.search("PG_POOL_MAX").hits] == ["MEMORY.md"]
        b.release()  # leaves the index it was given open
        assert idx.search("PG_POOL_MAX").hits


def test_qmd_that_cannot_open_answers_through_builtin_and_says_why(tmp_path: Path) -> None:
    ws = _ws(tmp_path, f'[qmd]\ncommand = "{tmp_path / "no-such-qmd"}"\n')
    with MemoryIndex.open(ws, provider="none") as idx:
        b = open_backend(idx, "qmd")
        assert isinstance(b, OpenedFallback) and isinstance(b, MemoryBackend)
        assert ENGINE not in b.capabilities  # the faces show it as the qmd they asked for
        assert b.fallback is not None and "qmd binary unavailable" in b.fallback.reason
        res = b.search("PG_POOL_MAX")
        assert res.backend == "builtin" and res.fallback == b.fallback


def test_cli_search_goes_through_the_backend_face(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Builtin (the default) keeps its own output; qmd that cannot open reports the fallback."""
    ws = _ws(tmp_path, f'[qmd]\ncommand = "{tmp_path / "no-such-qmd"}"\n')
    assert cli_main(["search", "PG_POOL_MAX", "-w", str(ws), "--provider", "none",
                     "--no-record"]) == 0
    assert "MEMORY.md:" in capsys.readouterr().out
    assert cli_main(["search", "PG_POOL_MAX", "-w", str(ws), "--provider", "none",
                     "--no-record", "--backend", "qmd", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"backend": "builtin"' in out and '"from": "qmd"' in out
