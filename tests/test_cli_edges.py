"""The command line's hard edges (issue #13 items 10, 12, 13), run as a user runs it.

Every case here failed before: a traceback, a lost batch, unbounded memory, a flood of progress
updates in a log. Workspaces are fresh copies of the demo, keyword-only (``--provider none``) so
that no model is loaded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT

CLI = [sys.executable, "-m", "memory_core"]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a refused command (exit code 2, no traceback)."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ----------------------------------------------------------------------------- item 10: --db


def test_db_that_is_a_folder_or_under_a_file_is_one_line(demo_ws: Path, tmp_path: Path) -> None:
    memory_md = demo_ws / "MEMORY.md"
    before = memory_md.read_bytes()
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for cmd in ("search", "index", "status"):
        args = [cmd, "-w", str(demo_ws), "--provider", "none", "--db", str(folder)]
        if cmd == "search":
            args[1:1] = ["cookie"]
        line = one_line_error(run(*args))
        assert "is a folder" in line and str(folder) in line
    assert list(folder.iterdir()) == []  # nothing was built inside or beside it
    assert not list(tmp_path.glob("a-folder.tmp-*"))

    line = one_line_error(run("search", "cookie", "-w", str(demo_ws), "--provider", "none",
                              "--db", str(memory_md / "index.sqlite")))
    assert "is a file, not a folder" in line and "MEMORY.md" in line
    assert memory_md.read_bytes() == before


# ----------------------------------------------------------------------------- item 12: batch


def test_batch_answers_every_good_line_and_an_error_line_for_each_bad_one(
        demo_ws: Path, tmp_path: Path) -> None:
    long_query = " ".join(f"term{i}" for i in range(100_000))  # over the line cap
    capped = " ".join(["COOKIE_EXPIRED"] + [f"w{i}" for i in range(999)])  # 1,000 terms
    lines = [
        b'{"qid": "ok1", "query": "COOKIE_EXPIRED"}',
        b'{"qid": "null", "query": null}',
        b'{"qid": "num", "query": 123}',
        b'{"qid": "bad-utf8", "query": "caf\xff"}',
        b"not json at all",
        b'["a", "list"]',
        json.dumps({"qid": "huge", "query": long_query}).encode(),
        json.dumps({"qid": "capped", "query": capped}).encode(),
        b"",
        '{"qid": "ok2", "query": "连接池"}'.encode(),
    ]
    f = tmp_path / "batch.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    proc = run("search", "--batch", str(f), "-w", str(demo_ws), "--provider", "none",
               "--no-record")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    rows = [json.loads(ln) for ln in proc.stdout.splitlines()]
    # one output line per non-blank input line, in order; qid, else the line number
    assert [r["qid"] for r in rows] == ["ok1", "null", "num", 4, 5, 6, 7, "capped", "ok2"]
    by = {r["qid"]: r for r in rows}
    assert by["ok1"]["results"][0]["path"] == "memory/2026-11-03.md"
    assert by["ok2"]["results"], "the line after the bad ones is still answered"
    assert "query" in by["null"]["error"] and by["null"]["line"] == 2
    assert "int, not a string" in by["num"]["error"]
    assert "not UTF-8" in by[4]["error"] and "not JSON" in by[5]["error"]
    assert "not a JSON object" in by[6]["error"] and "longer than" in by[7]["error"]
    for r in rows:
        assert ("error" in r) == (r["results"] == [] and r["qid"] not in ("ok1", "ok2",
                                                                          "capped"))
    assert "first 256 terms (of 1000)" in by["capped"]["note"]
    assert by["capped"]["results"][0]["path"] == "memory/2026-11-03.md"
    assert f"{f}:2:" in proc.stderr  # the bad lines are also named on stderr


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not Path("/dev/zero").exists() or not Path("/proc/self/status").exists(),
                    reason="needs /dev/zero and /proc")
def test_batch_from_dev_zero_keeps_memory_bounded(demo_ws: Path) -> None:
    """``/dev/zero`` is one endless line: it is read in bounded pieces, never held whole."""
    assert run("index", "-w", str(demo_ws), "--provider", "none", "--no-progress",
               "--json").returncode == 0
    proc = subprocess.Popen([*CLI, "search", "--batch", "/dev/zero", "-w", str(demo_ws),
                             "--provider", "none", "--no-record"], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        samples = []
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline and proc.poll() is None:
            samples.append(_rss_mb(proc.pid))
            time.sleep(0.5)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        # start-up (Python, numpy, SQLite) settles early; reading zeros must add nothing
        # (before: the whole file was read into memory, gigabytes within seconds)
        settled = samples[len(samples) // 2:]
        assert max(settled) - min(settled) < 20, samples
        assert max(samples) < 1024, samples
    finally:
        proc.kill()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()


# ----------------------------------------------------------------------------- item 13


def test_piping_into_head_exits_quietly(tmp_path: Path) -> None:
    f = tmp_path / "long.md"
    f.write_text("\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(6000)))
    # ~6,000 output lines (far more than a pipe holds): head leaves after the first one
    proc = subprocess.run(
        ["bash", "-c", 'set -o pipefail; "$@" | head -n 1', "bash", *CLI, "chunk", str(f),
         "--tokens", "32", "--overlap", "0"],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.stdout.startswith("#0 lines 1-")
    assert proc.stderr == "", proc.stderr  # no BrokenPipeError traceback, no "Exception ignored"
    assert proc.returncode == 128 + signal.SIGPIPE


def test_progress_in_a_log_is_a_few_summary_lines(demo_ws: Path) -> None:
    proc = run("index", "-w", str(demo_ws), "--provider", "none", "--force")
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr  # no carriage-return bar updates in a pipe or a log
    progress = [ln for ln in proc.stderr.splitlines() if not ln.startswith("  warning")]
    assert 1 <= len(progress) <= 6, proc.stderr
    assert any(ln.startswith("scan:") and "done" in ln for ln in progress), proc.stderr
    assert "Memory index updated" in proc.stdout


# ----------------------------------------------------------------------------- restructure


def test_search_imports_no_feature_package_at_start(demo_ws: Path) -> None:
    """``memory-core search`` loads the engine only: promotion (recall recording) is imported
    on the first hit to record, evaluation, MCP and live watching never."""
    code = ("import sys\nfrom memory_core.cli import main\n"
            f"rc = main(['search', 'COOKIE_EXPIRED', '-w', {str(demo_ws)!r}, '--provider', "
            "'none', '--no-record', '--json'])\n"
            "feats = ('promotion', 'evaluation', 'mcp', 'live')\n"
            "print(sorted(m for m in sys.modules if m.split('.')[:2][-1] in feats\n"
            "             and m.startswith('memory_core.')), file=sys.stderr)\n"
            "sys.exit(rc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300, env={**os.environ})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["results"]
    assert proc.stderr.strip().splitlines()[-1] == "[]", proc.stderr
