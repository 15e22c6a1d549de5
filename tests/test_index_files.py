"""The index's file family is named in one place (issue #20 item 4): ``memory_core.base.
indexfiles`` spells the siblings' suffixes, no other module does, and the family it names is
every file an index really has beside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.indexfiles import IndexFiles
from memory_core.base.synclock import sync_lock
from memory_core.live.heartbeat import HeartbeatWriter
from tests.product_files import ROOT, product_files

HOME = ROOT / "memory_core" / "base" / "indexfiles.py"
#: A suffix of the family inside a string literal (``"promotion.lock"`` is not one: a name
#: runs into it).
SUFFIX = re.compile(r"(?<![\w])(\.vectors|\.postings|\.lock|\.watch\.json|\.damaged|\.owner"
                    r"|\.tmp-)|^-(wal|shm)$")


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            ids.add(id(body[0].value))
    return ids


def suffix_literals(path: Path) -> list[str]:
    """``line: literal`` for each string literal of ``path`` (docstrings aside; f-strings'
    literal parts included) that spells a suffix of the family."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    return [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in skip and SUFFIX.search(node.value)]


def test_no_module_but_indexfiles_spells_the_family() -> None:
    found = [f"{p.relative_to(ROOT)}:{hit}" for p in product_files() if p != HOME
             for hit in suffix_literals(p)]
    assert found == []
    assert suffix_literals(HOME)  # the checker sees them where they are


def test_checker_sees_plain_and_f_string_suffixes(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('"""Docs may say <db>.lock."""\n'
                   'a = db.with_name(db.name + ".lock")\n'
                   'b = f"{db}.tmp-{pid}"\n'
                   'c = "promotion.lock"\n'
                   'for s in ("-wal", "-shm"):\n    pass\n')
    assert sorted(h.split(":")[0] for h in suffix_literals(src)) == ["2", "3", "5", "5"]


def test_the_family_is_every_file_beside_an_index(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "0")  # write the postings sidecar
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Notes\n\nThe boiler is serviced in March.\n")
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    files = IndexFiles(idx.store_path)
    # a killed rebuild's leftover and a damage marker, as the engine names them
    files.tmp("killed").write_bytes(b"")
    idx.store.unavailable(Exception("test"))
    beat = HeartbeatWriter(idx.store_path, owner="test", workspace=ws).start()
    try:
        with sync_lock(idx.store_path, wait_s=0):
            assert idx.search("boiler")
            present = {p for p in idx.store_path.parent.iterdir()
                       if p.name.startswith(idx.store_path.name)}
    finally:
        beat.stop()
        idx.close()
    expected = {files.db, files.wal, files.shm, files.postings, files.lock, files.watch,
                files.owner, files.damaged, files.tmp("killed")}
    assert present == expected
