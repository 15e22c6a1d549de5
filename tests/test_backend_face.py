"""The backend protocol as the only door of the faces (issue 20 item 1, issue 32 item 1).

The CLI and the MCP server open a backend for every request and render what its answers hold;
none of them asks what a backend is or can do (its kind, a capability, its class), tests for a
missing backend or probes attributes with ``hasattr``: what differs between backends is a
method each implements. The builtin engine is the default implementation; qmd that cannot be
opened answers through builtin and says why (``fallback``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.backends import BackendSync, MemoryBackend, OpenedFallback, open_backend
from memory_core.cli import main as cli_main
from memory_core.read.fusion import FusionResult

ROOT = Path(__file__).resolve().parents[1]
FACES = [ROOT / "memory_core" / "cli", ROOT / "memory_core" / "mcp", ROOT / "workbench",
         ROOT / "pages", ROOT / "app.py"]
#: A face asking which backend it holds or what it can do, in any spelling we have seen: the
#: capability constants, a backend's (or an answer's) kind compared, its class tested, a
#: missing backend, an attribute probed.
BRANCHES = re.compile(
    r"capabilities|\bENGINE\b|\bOWN_INDEX\b"
    r"|\b(backend|b|res|result|answer|st|status)\.(kind|backend)\s*(==|!=|in\b|not in\b)"
    r"|isinstance\([^)]*(BuiltinBackend|FallbackBackend|QmdBackend|OpenedFallback)"
    r"|backend is None|backend is not None|hasattr\(backend"
    r"""|\.get\(["']backend["']\)\s*(==|!=)|\[["']backend["']\]\s*(==|!=)""")


def _ws(tmp_path: Path, toml: str = "") -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- PG_POOL_MAX is 32.\n", encoding="utf-8")
    if toml:
        (ws / "memory-workbench.toml").write_text(toml, encoding="utf-8")
    return ws


def test_faces_never_branch_on_a_backend_kind_or_capability() -> None:
    found = []
    for face in FACES:
        for f in ([face] if face.is_file() else sorted(face.rglob("*.py"))):
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if BRANCHES.search(line):
                    found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


@pytest.mark.parametrize("line", [
    "if ENGINE not in backend.capabilities:",
    "if OWN_INDEX in b.capabilities and args.once:",
    'if res.backend == "builtin":',
    'if st.backend != "builtin" or qmd:',
    "if isinstance(backend, FallbackBackend):",
    'if backend.kind in ("qmd",):',
    "if backend is None:",
    'if r.get("backend") != "qmd":',
    'if report["backend"] == "builtin":',
])
def test_the_ban_catches_every_spelling_seen_so_far(line: str) -> None:
    assert BRANCHES.search(line), line


def test_builtin_is_the_default_backend_and_answers_with_its_fusion(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with MemoryIndex.open(ws, provider="none") as idx:
        b = open_backend(idx)
        assert isinstance(b, MemoryBackend) and b.kind == "builtin"
        assert b.fallback is None
        done = b.sync()
        assert isinstance(done, BackendSync) and done.report["files_indexed"] == 1
        assert done.summary[0].startswith("Memory index updated")
        assert b.files_changed() is None and b.follow() is None  # the live index follows
        res = b.search("PG_POOL_MAX")
        assert [h.path for h in res.hits] == ["MEMORY.md"]
        assert isinstance(res.detail, FusionResult) and res.detail.hits == res.hits
        assert res.extra["provider"] == "none"
        b.release()  # leaves the index it was given open
        assert idx.search("PG_POOL_MAX").hits


def test_qmd_that_cannot_open_answers_through_builtin_and_says_why(tmp_path: Path) -> None:
    ws = _ws(tmp_path, f'[qmd]\ncommand = "{tmp_path / "no-such-qmd"}"\n')
    with MemoryIndex.open(ws, provider="none") as idx:
        b = open_backend(idx, "qmd")
        assert isinstance(b, OpenedFallback) and isinstance(b, MemoryBackend)
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


def test_watch_reads_qmd_s_answer_not_its_kind() -> None:
    """``watch`` says builtin answers when a qmd update brings no report (qmd failed and the
    builtin index answers), and prints qmd's figures when it does."""
    from memory_core.backends.qmd_timers import TimerEvent
    from memory_core.cli.watch import _qmd_line

    fell = _qmd_line(TimerEvent("interval", True, None), False)
    assert fell.endswith("qmd update (interval): builtin answers (qmd fell back)")
    ran = _qmd_line(TimerEvent("boot", True, {"backend": "qmd", "updated": True,
                                               "updateMs": 12, "embedded": 3}), False)
    assert ran.endswith("qmd update (boot): 12 ms; embedded 3")
    assert _qmd_line(TimerEvent("watch", False, None, error="qmd exited 1"), False).endswith(
        "qmd update (watch) failed: qmd exited 1")
