"""``search --batch`` records recalls through one state-store connection (issue #26 item 0).

What it must keep: the state after a batch is exactly the state the same searches give when
each is recorded on its own (``record_search``: a connection per search), and every answered
query's recalls are committed before the next one (a killed batch keeps them, the store opens).
Real engine, real files, keyword-only (provider ``none``) so that no model loads.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.cli import main as cli_main
from memory_core.promotion.concepts import derive_concept_tags
from memory_core.promotion.policy import tuned
from memory_core.promotion.signals import BatchRecorder

try:
    from tests.conftest import ROOT, copy_demo
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from conftest import ROOT, copy_demo  # type: ignore[no-redef]

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
#: Demo queries, some repeated (the same chunk recalled again), one that finds nothing.
QUERIES = ["COOKIE_EXPIRED", "which port does PgBouncer listen on", "HTTP 429 Retry-After backoff",
           "ERR_TLS_HANDSHAKE", "PgBouncer pool", "COOKIE_EXPIRED", "xyzzy plugh nonsense",
           "crawler concurrency", "which port does PgBouncer listen on", "PG_DEADLOCK_40P01"]
TIMES = ("first_recalled_at", "last_recalled_at", "at", "promoted_at")


def dump(ws: Path, *, drop_times: bool = False) -> dict[str, list[Any]]:
    """Every row of the state store's signal tables, in a stable order."""
    with pr.open_state(ws) as st:
        entries = st.recall_entries()
        events = {e["key"]: st.recall_events(e["key"], limit=1000) for e in entries}
        out: dict[str, list[Any]] = {
            "entries": entries,
            "events": sorted(events.items()),
            "raw_events": st.db.execute(
                "SELECT id, key, kind, query_hash, query, day, score, at FROM recall_events"
                " ORDER BY id").fetchall(),
        }
    if drop_times:
        out = {"entries": [{k: v for k, v in e.items() if k not in TIMES} for e in entries],
               "events": [(k, [{f: v for f, v in e.items() if f not in TIMES} for e in evs])
                          for k, evs in sorted(events.items())]}
    return out


def searched(idx: MemoryIndex) -> list[tuple[str, Any]]:
    return [(q, idx.search(q).hits) for q in QUERIES]


def test_batch_recorder_leaves_the_state_per_query_recording_leaves(tmp_path: Path) -> None:
    a, b = copy_demo(tmp_path / "a"), copy_demo(tmp_path / "b")
    # a small retention cap, so that eviction runs in both paths too
    with tuned(retention_cap=6):
        with MemoryIndex.open(a, provider="none") as idx:
            for i, (q, hits) in enumerate(searched(idx)):
                pr.record_search(idx, q, hits, now=NOW + timedelta(minutes=i))
        with MemoryIndex.open(b, provider="none") as idx, BatchRecorder(idx) as rec:
            counts = [rec(q, hits, now=NOW + timedelta(minutes=i))
                      for i, (q, hits) in enumerate(searched(idx))]
    assert counts[6] == 0 and sum(counts) > 6  # nothing for the nonsense query; recalls else
    want, got = dump(a), dump(b)
    assert got == want
    assert len(got["entries"]) == 6  # evicted down to the cap
    assert max(e["recall_count"] for e in got["entries"]) >= 2  # a chunk recalled again
    for e in got["entries"]:  # the remembered tags are the function's own
        assert e["concept_tags"] == derive_concept_tags(e["path"], e["snippet"])


def test_batch_recorder_without_recalls_does_not_create_the_store(tmp_path: Path) -> None:
    ws = copy_demo(tmp_path)
    with MemoryIndex.open(ws, provider="none") as idx, BatchRecorder(idx) as rec:
        assert rec("xyzzy plugh nonsense", idx.search("xyzzy plugh nonsense").hits) == 0
        assert rec("   ", idx.search("COOKIE_EXPIRED").hits) == 0
    assert not pr.state_path(ws).exists()


def cli(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_core", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, check=True, **kw)


def test_cli_batch_records_what_one_search_per_process_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = copy_demo(tmp_path / "a"), copy_demo(tmp_path / "b")
    for ws in (a, b):
        cli("index", "-w", str(ws), "--provider", "none", "--no-progress")
    # one `search` command a query, each run through the CLI's main as its own invocation (in
    # this process: a child each was ten interpreter starts; the batch below is a real child)
    for q in QUERIES:
        assert cli_main(["search", q, "-w", str(a), "--provider", "none", "--json"]) == 0
    capsys.readouterr()
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps({"qid": i, "query": q}) + "\n"
                             for i, q in enumerate(QUERIES)))
    out = cli("search", "--batch", str(batch), "-w", str(b), "--provider", "none")
    assert len(out.stdout.splitlines()) == len(QUERIES)
    want, got = dump(a, drop_times=True), dump(b, drop_times=True)
    assert got["entries"] and got == want
    # --no-record still records nothing
    c = copy_demo(tmp_path / "c")
    cli("search", "--batch", str(batch), "-w", str(c), "--provider", "none", "--no-record")
    assert not pr.state_path(c).exists()


def test_a_killed_batch_keeps_the_recalls_of_the_queries_it_answered(tmp_path: Path) -> None:
    ws = copy_demo(tmp_path)
    cli("index", "-w", str(ws), "--provider", "none", "--no-progress")
    # /dev/stdin: the batch reads the pipe as it is written, as a consumer's pipe would be
    proc = subprocess.Popen([sys.executable, "-m", "memory_core", "search", "--batch",
                             "/dev/stdin", "-w", str(ws), "--provider", "none"], cwd=ROOT,
                            text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        for i, q in enumerate(QUERIES[:2]):
            proc.stdin.write(json.dumps({"qid": i, "query": q}) + "\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["qid"] == i  # answered
        # the batch is still running (its input is open) when another process reads
        rows = dump(ws)["entries"]
        assert {e["query_hashes"][-1] for e in rows} >= {pr.query_hash(QUERIES[1])}
        assert sum(e["recall_count"] for e in rows) >= 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert dump(ws)["entries"] == rows  # nothing lost, and the store still opens
