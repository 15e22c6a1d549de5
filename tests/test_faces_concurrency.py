"""Issue #19 items 1-3, the whole mix: the real faces as processes on one copy of the demo
workspace for a bounded time, then the index must be sound and equal to a fresh build.

An MCP server over HTTP with two clients searching in a loop, two ``index`` loops, ``watch``,
a ``search`` loop, a ``promote --apply``/``--undo`` loop and a writer appending to ten diaries
every 0.1 s (``tests/faces_mix.py``). Every search must answer with its known hit (no error
result, never an empty success); no face may report a damaged or malformed index. The 10-minute
form is ``benchmarks/bench_faces.py --seconds 600``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import copy_demo
from tests.faces_mix import ENV, EXE, index_matches_fresh_build, index_path, integrity, run_mix

MIX_SECONDS = 35


@pytest.mark.slow
@pytest.mark.soak  # the faces run together for MIX_SECONDS however fast the machine is
def test_faces_together_keep_the_index_whole(tmp_path: Path) -> None:
    ws = copy_demo(tmp_path)
    report = run_mix(ws, MIX_SECONDS)
    summary = report.summary()
    assert report.problems() == [], summary
    assert report.answered >= 20, summary  # the clients really searched throughout
    assert summary["commands"].get("index", 0) >= 2, summary
    assert summary["commands"].get("apply", 0) >= 1, summary
    assert summary["commands"].get("search", 0) >= 1, summary
    assert summary["commands"].get("dream", 0) >= 1, summary
    assert report.lost == [], summary  # promote, undo and dream kept every appended line
    assert report.appended > 0
    applied = [c for c in report.commands if c.face == "apply" and c.rc == 0]
    assert applied, summary
    assert integrity(index_path(ws)) == "ok"
    only_ours, only_fresh = index_matches_fresh_build(ws)
    assert only_ours == set() and only_fresh == set()
    assert not Path(f"{index_path(ws)}.damaged").exists()
    deep = subprocess.run([EXE, "status", "-w", str(ws), "--provider", "none", "--deep"],
                          env=ENV, capture_output=True, text=True, timeout=300)
    assert deep.returncode == 0 and "Traceback" not in deep.stderr, deep.stderr
