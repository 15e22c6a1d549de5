"""The qmd backend's pure parts (no qmd needed): qmd's JSON, line ranges, the reference's
source diversification and injection budget, collection listing, the install script without npm,
and the backend reporting itself unavailable when qmd cannot be found."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from memory_core.backends import OpenedFallback, clear_open_failures, open_backend
from memory_core.backends.qmd_process import QmdError, parse_query_json, resolve_command
from memory_core.backends.qmd_results import (
    clamp_injected,
    diversify_by_source,
    parse_collection_list,
    snippet_lines,
)
from memory_core.base.locations import REPO_ROOT
from memory_core.read.fusion import Hit


def hit(path: str, source: str, score: float, snippet: str = "x") -> Hit:
    return Hit(id=path, path=path, source=source, start_line=1, end_line=1, score=score,
               snippet=snippet)


def test_parse_query_json_shapes() -> None:
    raw = ('[{"docid": "#46594e", "score": 0.8, "file": "qmd://memory-dir-main/a b.md", '
           '"line": 15, "snippet": "@@ -14,4 @@ (13 before, 20 after)\\nx"}]')
    [e] = parse_query_json(raw, "")
    assert (e["docid"], e["score"], e["line"], e["file"]) == (
        "#46594e", 0.8, 15, "qmd://memory-dir-main/a b.md")
    assert parse_query_json("No results found.", "") == []
    assert parse_query_json("", "qmd: no results found") == []
    noisy = "warming up...\n" + raw + "\ndone"
    assert len(parse_query_json(noisy, "")) == 1
    with pytest.raises(QmdError, match="stdout empty"):
        parse_query_json("", "boom")
    with pytest.raises(QmdError, match="not an array"):
        parse_query_json('{"a": 1}', "")


def test_line_ranges() -> None:
    snippet = "@@ -14,4 @@ (13 before, 20 after)\na\nb\nc\nd"
    assert snippet_lines({"line": 15}, snippet) == (14, 17)  # the hunk header wins
    assert snippet_lines({"start_line": 9, "end_line": 7}, snippet) == (7, 9)
    assert snippet_lines({"start_line": 20}, snippet) == (20, 23)
    assert snippet_lines({"end_line": 20}, snippet) == (17, 20)
    assert snippet_lines({"line": 15}, "no header") == (15, 15)  # ours: qmd's line, not 1..n
    assert snippet_lines({}, "a\nb") == (1, 2)


def test_diversify_and_budget() -> None:
    hs = [hit("m1", "memory", 0.9), hit("m2", "memory", 0.8), hit("s1", "sessions", 0.7),
          hit("m3", "memory", 0.6), hit("s2", "sessions", 0.5)]
    assert [h.path for h in diversify_by_source(hs, 4)] == ["m1", "s1", "m2", "s2"]
    only = [hit("m1", "memory", 0.9), hit("m2", "memory", 0.8)]
    assert [h.path for h in diversify_by_source(only, 1)] == ["m1"]
    big = [hit(f"m{i}", "memory", 1 - i / 10, "y" * 450) for i in range(6)]
    kept = clamp_injected(big, 2200)
    assert [len(h.snippet) for h in kept] == [450, 450, 450, 450, 400]
    assert clamp_injected(big, 0) == big


def test_collection_list_text() -> None:
    text = ("Collections (2):\n\nmemory-root-main (qmd://memory-root-main/)\n"
            "  Pattern:  MEMORY.md\n  Files:    1\n\n"
            "memory-dir-main (qmd://memory-dir-main/)\n  Pattern:  **/*.md\n")
    assert parse_collection_list(text) == {"memory-root-main": {"pattern": "MEMORY.md"},
                                           "memory-dir-main": {"pattern": "**/*.md"}}
    assert parse_collection_list('[{"name": "a", "path": "/x", "mask": "*.md"}]') == {
        "a": {"path": "/x", "pattern": "*.md"}}


def test_missing_program_reports_unavailable(tmp_path: Path) -> None:
    """A command that is not there: the backend says so and builtin answers."""
    clear_open_failures()
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\nThe router is a MikroTik.\n", encoding="utf-8")
    assert resolve_command(str(tmp_path / "nope")) is None
    b = open_backend(ws, "qmd", provider="none",
                     overrides={"qmd": {"command": str(tmp_path / "nope")}})
    assert isinstance(b, OpenedFallback)
    res = b.search("router MikroTik")
    assert res.backend == "builtin" and res.hits and res.hits[0].path == "MEMORY.md"
    assert res.fallback is not None and "ENOENT" in res.fallback.reason
    assert "install-node-tools.sh" in res.fallback.reason
    b.close()
    clear_open_failures()


def test_install_script_without_npm(tmp_path: Path) -> None:
    """Where npm is missing the install script says so, installs nothing, and exits 0."""
    proj = tmp_path / "proj"
    (proj / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "install-node-tools.sh", proj / "scripts")
    bin_dir = tmp_path / "bin"  # a PATH with the shell's tools but no npm, no node
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "printf", "mkdir", "cat", "ln"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    r = subprocess.run(["bash", str(proj / "scripts" / "install-node-tools.sh")],
                       env={"PATH": str(bin_dir), "HOME": str(tmp_path)}, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "npm is not installed" in r.stdout and "@tobilu/qmd@2.8.3" in r.stdout
    assert not (proj / ".tools").exists()
