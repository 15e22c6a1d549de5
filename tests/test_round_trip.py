"""The engine end to end in ``make check``'s loop: ``index`` → ``search`` → ``get`` on a copy of
the small demo, with the keyword-only provider (``--provider none``: no model is loaded), each
a real ``memory-core`` process over real SQLite and FTS5, for both profiles.

It is the inner loop's one test of the store, the sync, the keyword leg, fusion and reading
(the other ``make check`` tests are pure); it must stay a few seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-workspace"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_core", *args], capture_output=True,
                          text=True, env=ENV, cwd=ROOT, timeout=300, check=False)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("round") / "demo-workspace"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".memory"))
    return target


@pytest.mark.parametrize("profile", ["default", "reference"])
def test_index_search_get_round_trip(ws: Path, profile: str) -> None:
    common = ["-w", str(ws), "--provider", "none", "--profile", profile]
    done = _cli("index", *common, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report  # what the sync did, as JSON
    again = _cli("index", *common, "--json")  # nothing changed: a no-op sync
    assert again.returncode == 0, again.stderr

    found = _cli("search", "COOKIE_EXPIRED", *common, "--json", "--no-record")
    assert found.returncode == 0, found.stderr
    out = json.loads(found.stdout)
    assert out["provider"] == "none" and out["mode"] == "fts-only"
    hits = out["results"]
    assert hits and hits[0]["path"] == "memory/2026-11-03.md"
    top = hits[0]
    assert top["startLine"] <= 9 <= top["endLine"]  # the labelled line (demo-queries.jsonl)

    read = _cli("get", top["path"], "-w", str(ws), "--from", "9", "--lines", "1", "--json")
    assert read.returncode == 0, read.stderr
    assert "COOKIE_EXPIRED" in json.loads(read.stdout)["text"]
    # the index never writes the workspace's Markdown
    assert (ws / "memory" / "2026-11-03.md").read_bytes() == (
        DEMO / "memory" / "2026-11-03.md").read_bytes()


def test_bad_input_is_one_line_and_exit_2(ws: Path) -> None:
    bad = _cli("get", "../outside.md", "-w", str(ws), "--provider", "none")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
