"""qmd answers that must not be trusted (issue 19 item 10), against the real qmd 2.8.3.

A citation from qmd's own index may carry ``../``; a docid that is a LIKE pattern (``_``,
``%``) must not match an arbitrary document; a query starting with ``--`` must reach qmd as
a query, never as one of its flags.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.backends import FallbackBackend, open_backend

from .test_qmd import QMD, make_workspace, ws  # noqa: F401  (the fixture)

pytestmark = pytest.mark.skipif(
    QMD is None, reason="qmd not installed (run `bash scripts/install-node-tools.sh`; needs npm)")


def _opened(ws: Path) -> FallbackBackend:  # noqa: F811
    b = open_backend(ws, "qmd")
    assert isinstance(b, FallbackBackend)
    assert b.search("WireGuard").backend == "qmd"  # indexed, and qmd answers
    return b


def test_dotdot_paths_in_qmds_index_are_never_cited(ws: Path, tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / "outside.md").write_text("# Outside\nWireGuard secrets outside the workspace\n")
    b = _opened(ws)
    q = b.primary
    assert q.to_location("memory-dir-main", "../../outside.md") is None
    assert q.to_location("memory-dir-main", "../MEMORY.md") is None  # another collection's
    assert q.to_location("memory-dir-main", "/etc/passwd") is None
    assert q.to_location("memory-dir-main", "2026/../x.md") is None
    # qmd's own index rewritten to point a WireGuard document outside its collection
    q.close()
    with sqlite3.connect(q.index_path) as db:
        db.execute("UPDATE documents SET path = '../../outside.md' WHERE id = (SELECT id FROM "
                   "documents WHERE collection = 'memory-dir-main' ORDER BY id LIMIT 1)")
        db.execute("UPDATE documents SET path = '../MEMORY.md' WHERE id = (SELECT id FROM "
                   "documents WHERE collection = 'memory-dir-main' ORDER BY id LIMIT 1 OFFSET 1)")
    res = b.search("WireGuard")
    assert res.backend == "qmd"
    assert [h.path for h in res.hits] == [h.path for h in res.hits if h.path.startswith(
        "memory/") or h.path == "MEMORY.md"]
    assert all(".." not in h.path.split("/") for h in res.hits), [h.path for h in res.hits]
    assert all(not h.path.startswith("qmd/") for h in res.hits)
    b.close()


def test_a_docid_is_never_a_pattern(ws: Path) -> None:  # noqa: F811
    b = _opened(ws)
    q = b.primary
    for docid in ("_", "#_", "%", "______", "#%", "a_", ""):
        assert q.locate(docid, None, None) is None, docid
    real = q._run_search(q.q.search_mode, "WireGuard", 5, q.collection_names(None))[0]
    assert q.locate(real["docid"], None, None) is not None  # a true docid still resolves
    b.close()


def test_a_query_starting_with_dashes_is_a_query(ws: Path) -> None:  # noqa: F811
    b = _opened(ws)
    plain = [h.path for h in b.search("WireGuard").hits]
    assert plain
    # today qmd reads these as its own flags and prints its usage: an empty answer
    for query in ("--zzqx WireGuard", "-zzqx WireGuard", "-- WireGuard"):
        res = b.search(query)
        assert res.backend == "qmd" and res.fallback is None, (query, res.fallback)
        assert [h.path for h in res.hits] == plain, query
    for query in ("--help", "--version", "--index other"):
        res = b.search(query)
        assert res.backend == "qmd" and res.fallback is None
        assert not any("Usage" in h.snippet or "qmd 2." in h.snippet for h in res.hits)
    assert not list((ws / ".memory" / "qmd").rglob("other*"))
    b.close()
