"""The command line, run as a user runs it: a subprocess, its output and its exit code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "memory_core", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def test_index_then_search_cookie_expired_json(indexed_demo: Path) -> None:
    out = run("index", "--workspace", str(indexed_demo), "--json", "--no-progress")
    report = json.loads(out.stdout)["report"]
    assert report["wrote_anything"] is False
    out = run("search", "COOKIE_EXPIRED", "--workspace", str(indexed_demo), "--json")
    data = json.loads(out.stdout)
    top = data["results"][0]
    assert set(top) >= {"path", "startLine", "endLine", "score", "snippet", "source"}
    assert top["path"] == "memory/2026-11-03.md"
    lines = (indexed_demo / top["path"]).read_text().split("\n")
    assert any("COOKIE_EXPIRED" in ln for ln in lines[top["startLine"] - 1 : top["endLine"]])
    assert len(data["results"]) <= 6


def test_search_explain_shows_both_legs(indexed_demo: Path) -> None:
    out = run("search", "COOKIE_EXPIRED", "--workspace", str(indexed_demo), "--explain")
    assert "via both" in out.stdout and "rank 1" in out.stdout
    assert "calibrated (local-v1): logit" in out.stdout  # the score's arithmetic (issue #21)
    out = run("search", "when was the computer overheating?", "--workspace", str(indexed_demo),
              "--explain", "--json")
    data = json.loads(out.stdout)
    # a vector-only paraphrase: returned first, or (weak evidence) shown below the abstention
    top = (data["results"] or data["belowGate"])[0]
    assert top["explain"]["vectorRank"] == 1 and top["textScore"] == 0
    if not data["results"]:
        assert data["abstention"].startswith("nothing relevant")
    out = run("search", "xyzzy plugh nonsense", "--workspace", str(indexed_demo), "--explain")
    assert out.stdout.startswith("No results: nothing relevant")


def test_reference_profile_search_with_overrides(indexed_demo_reference: Path) -> None:
    out = run("search", "COOKIE_EXPIRED", "--workspace", str(indexed_demo_reference), "--profile",
              "reference", "--json", "--min-score", "0", "--vector-weight", "0.5")
    # weights are normalised by their sum: 0.5 / (0.5 + 0.3) and 0.3 / 0.8
    data = json.loads(out.stdout)
    assert data["profile"] == "reference"
    top = data["results"][0]
    expected = 0.625 * top["vectorScore"] + 0.375 * top["textScore"]
    assert abs(top["score"] - expected) < 1e-6


def test_batch_search_loads_once_and_prints_one_line_per_query(indexed_demo: Path,
                                                               tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"qid": "a", "query": "COOKIE_EXPIRED"}\nnot json\n'
                 '{"qid": "b", "query": "连接池"}\n')
    out = run("search", "--batch", str(f), "--workspace", str(indexed_demo), "--json")
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    # one output line per input line: the bad one says why, under its line number
    assert [r["qid"] for r in rows] == ["a", 2, "b"]
    assert rows[0]["results"][0]["path"] == "memory/2026-11-03.md"
    assert rows[1]["results"] == [] and "not JSON" in rows[1]["error"]
    assert "q.jsonl:2: not JSON" in out.stderr


def test_get_and_status(indexed_demo: Path) -> None:
    out = run("get", "memory/2026-11-03.md", "--workspace", str(indexed_demo), "--from", "9",
              "--lines", "1", "--json")
    assert "COOKIE_EXPIRED" in json.loads(out.stdout)["text"]
    st = json.loads(run("status", "--workspace", str(indexed_demo), "--json").stdout)
    assert st["files"] > 10 and st["vector"]["dims"] == 384 and st["fts"]["available"]
    text = run("status", "--workspace", str(indexed_demo)).stdout
    assert "Indexed:" in text and "Vector: exact sidecar search" in text and "sqlite-vec" in text


def test_errors_are_one_line_and_nonzero(tmp_path: Path, indexed_demo: Path) -> None:
    proc = run("search", "x", "--workspace", str(tmp_path / "missing"), check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().count("\n") == 0 and "does not exist" in proc.stderr
    proc = run("get", "../../etc/passwd.md", "--workspace", str(indexed_demo), check=False)
    assert proc.returncode != 0 and "not a memory file" in proc.stderr


def test_chunk_command_reference_mode(tmp_path: Path) -> None:
    f = tmp_path / "long.md"
    f.write_text("a" * 4000)
    data = json.loads(run("chunk", str(f), "--mode", "reference", "--json").stdout)
    assert [len(c["text"]) for c in data["chunks"]] == [1600, 3201, 2401]
    assert all({"startLine", "endLine", "hash", "text"} <= set(c) for c in data["chunks"])
    data = json.loads(run("chunk", str(f), "--json").stdout)
    assert data["mode"] == "bounded" and max(len(c["text"]) for c in data["chunks"]) <= 1600


def test_progress_lines_say_queries_not_querys(capsys: pytest.CaptureFixture[str]) -> None:
    from memory_core.cli.common import progress_bar

    prog = progress_bar(True)  # stderr is captured, not a terminal: the one-line summary form
    assert prog is not None
    prog("query", 0, 27)
    prog("scan", 0, 3)
    err = capsys.readouterr().err
    assert "query: 27 queries…" in err and "querys" not in err
    assert "scan: 3 files…" in err


def test_a_search_that_builds_an_index_first_says_so(demo_ws: Path) -> None:
    args = ["search", "COOKIE_EXPIRED", "-w", str(demo_ws), "--provider", "none",
            "--profile", "reference", "--no-record"]
    first = run(*args)
    assert first.returncode == 0, first.stderr
    assert "no reference-profile index for this workspace yet: building" in first.stderr
    assert "reference-none.sqlite" in first.stderr
    again = run(*args)
    assert again.returncode == 0 and "building" not in again.stderr
