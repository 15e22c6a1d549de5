"""Issue #32: the source names (``memory``, ``sessions``) are declared once, as
``config.SourceName``; the tools' corpora, the MCP schemas, the OpenClaw import, the real-query
rerun and the default settings derive theirs from it (``config.SOURCE_NAMES``), so that a new
source is written in one place."""

from __future__ import annotations

import ast
from pathlib import Path

from memory_core import tools
from memory_core.base.config import SOURCE_NAMES, MemoryConfig
from memory_core.mcp.schemas import SEARCH_RESULT_ITEM
from tests.product_files import ROOT, product_files

DECLARED = ROOT / "memory_core" / "base" / "config.py"


def name_lists(path: Path) -> list[str]:
    """``line: source`` for each list, tuple or set literal of ``path`` holding two or more
    source names as string constants (the ``Literal[...]`` of a type aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed = {id(node.slice) for node in ast.walk(tree) if isinstance(node, ast.Subscript)
             and isinstance(node.value, ast.Name) and node.value.id == "Literal"}
    return [f"{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and id(node) not in typed
            and len({e.value for e in node.elts if isinstance(e, ast.Constant)
                     and e.value in SOURCE_NAMES}) >= 2]


def test_no_module_spells_the_source_names_again() -> None:
    found = [f"{p.relative_to(ROOT)}:{hit}" for p in product_files() for hit in name_lists(p)]
    assert found == []
    assert "SourceName = Literal" in DECLARED.read_text(encoding="utf-8")


def test_checker_sees_a_list_of_names_but_not_the_type(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('"""Docs may say ["memory", "sessions"]."""\n'
                   'S = Literal["memory", "sessions"]\n'
                   'a = x in ("memory", "sessions")\n'
                   'b = {"enum": ["sessions", "memory", "all"]}\n'
                   'c = ["sessions"]\n')
    assert [h.split(":")[0] for h in name_lists(src)] == ["3", "4"]


def test_every_face_offers_the_declared_names() -> None:
    assert SOURCE_NAMES == ("memory", "sessions")
    assert tools.CORPORA == (*SOURCE_NAMES, "all")
    assert tools.SEARCH_SCHEMA["properties"]["corpus"]["enum"] == [*SOURCE_NAMES, "all"]
    for field in ("source", "corpus"):
        assert SEARCH_RESULT_ITEM["properties"][field]["enum"] == list(SOURCE_NAMES)
    assert MemoryConfig().sources.sources == list(SOURCE_NAMES)
