"""One bad line breaks nothing (issue #33, item 2): a transcript line holding a lone surrogate
escape (``"\\ud83d"``: valid JSON, no character) is repaired with a warning naming the file and
line; ``index``, ``--force``, ``search``, ``search --batch`` with recording and ``dream
--sessions`` all still work for the rest of the workspace, and ``status`` says what happened."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from memory_core.base.text import repair_surrogates
from memory_core.promotion.memory_file import promotion_markers
from memory_core.write.sources import render_session

try:
    from tests.conftest import ROOT
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from conftest import ROOT  # type: ignore[no-redef]

BAD_TURN = '{"type": "message", "message": {"role": "user", "content": "hello \\ud83d crawler"}}'
GOOD_TURN = ('{"type": "message", "message": {"role": "assistant", "content": '
             '"the crawler pool holds eight connections"}}')


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_core", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "sessions").mkdir()
    (ws / "MEMORY.md").write_text("# Mine\n\n- pgbouncer pool limits\n")
    (ws / "memory" / "2026-11-01.md").write_text("# 2026-11-01\n\n- crawler ok\n")
    (ws / "sessions" / "a.jsonl").write_text(f"{GOOD_TURN}\n{BAD_TURN}\n")
    return ws


def test_repair_surrogates() -> None:
    assert repair_surrogates("a\ud83db") == ("a\ufffdb", 1)
    assert repair_surrogates("a\U0001f600b") == ("a\U0001f600b", 0)


def test_a_lone_surrogate_line_is_repaired_with_its_line_named() -> None:
    r = render_session(f"{GOOD_TURN}\n{BAD_TURN}\n", "sessions/a.jsonl")
    assert "hello \ufffd crawler" in r.content
    assert r.content.encode("utf-8")
    assert r.warnings == ["sessions/a.jsonl: line 2: a lone surrogate escape (no character) "
                          "replaced by U+FFFD"]


def test_the_workspace_still_indexes_searches_and_dreams(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    common = ["-w", str(ws), "--provider", "none"]
    out = run("index", *common, "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "sessions/a.jsonl: line 2" in out.stdout + out.stderr
    assert run("index", *common, "--force", "--no-progress").returncode == 0
    found = run("search", "eight connections", *common, "--json")
    assert found.returncode == 0, found.stderr
    assert any(h["path"] == "sessions/a.jsonl" for h in json.loads(found.stdout)["results"])
    status = json.loads(run("status", *common, "--json").stdout)
    assert "sessions/a.jsonl" in status["fileWarnings"]
    text = run("status", *common).stdout
    assert "Files with warnings: 1" in text and "  sessions/a.jsonl: line 2: a lone" in text
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"qid": "1", "query": "crawler \\ud83d"}\n'
                       '{"qid": "2", "query": "pgbouncer pool"}\n')
    batch = run("search", "--batch", str(queries), *common)  # recorded: the default
    assert batch.returncode == 0, batch.stderr
    assert [json.loads(line)["qid"] for line in batch.stdout.splitlines()] == ["1", "2"]
    dream = run("dream", *common, "--sessions")
    assert dream.returncode == 0, dream.stderr


def test_markers_are_found_per_markdown_line_not_per_unicode_line() -> None:
    text = "```\u2028<!-- openclaw-memory-promotion:memory:a.md:1:1 -->\n```\n"
    assert promotion_markers(text) == []


def test_memory_md_items_keep_their_line_numbers_past_a_unicode_line_separator() -> None:
    from memory_core.promotion.duplicates import memory_units

    text = "# Mine\r\n\r\n- one\u2028still one\r\n- two\x85too\r\n- three\r\n"
    assert [n for n, _ in memory_units(text)] == [3, 4, 5]
