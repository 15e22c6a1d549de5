"""Sync cost: an incremental update of N changed files against a rebuild of them, and a no-op
``index`` of a large workspace against a bare ``os.walk`` + ``stat`` of the same tree.

Issue #13 item 14 (goal: updating N changed files costs at most 1.2× rebuilding them) and issue
#10 item 3 (goal: a no-op index of 10k files at most 3× the bare walk). Run::

    .venv/bin/python benchmarks/bench_sync.py [--files 1500] [--noop-files 10000] [--repeat 3]

Two providers: ``none`` (keyword-only: chunks, two FTS5 tables, files) and ``vectors``, a real
OpenAI-compatible HTTP server on 127.0.0.1 (``scale_support.HashEmbedServer``, 64 dims) answering
with deterministic hashed vectors that cost microseconds (so the figures measure the index, not
a model). Each changed-files round writes new content into every file, so the incremental sync
and the forced rebuild embed the same number of new chunks; both are timed in a fresh
:class:`MemoryIndex` (open + sync). Figures are medians of ``--repeat`` rounds, as ratios
measured side by side in one run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_support import HashEmbedServer

from memory_core import MemoryIndex
from memory_core.write import sync as sync_mod

#: Vector width of the hashed embeddings (small: the figures measure the index, not vectors).
DIMS = 64
T = TypeVar("T")
_WORDS = ("deploy cache cookie session token rollback backup restore queue worker schedule "
          "index search vector keyword migration schema retry timeout pool replica shard "
          "latency budget incident alert dashboard runbook release branch review merge").split()


# ----------------------------------------------------------------------------- workspaces


def write_files(ws: Path, n: int, round_: int, lines: int = 14) -> None:
    """``n`` small diary-style notes in folders of 100; ``round_`` changes every file's text."""
    for i in range(n):
        d = ws / "memory" / f"batch-{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        words = [_WORDS[(i * 7 + j * 3 + round_) % len(_WORDS)] for j in range(lines * 8)]
        body = "\n".join(" ".join(words[k * 8:(k + 1) * 8]) + f" NOTE_{i}_{round_}"
                         for k in range(lines))
        (d / f"note-{i:05d}.md").write_text(f"# note {i} round {round_}\n{body}\n")


def overrides_for(kind: str, base_url: str | None) -> dict[str, Any]:
    if kind == "none":
        return {"provider": {"provider": "none", "fallback": []}}
    return {"provider": {"provider": "openai", "base_url": base_url, "model": "hash-64",
                         "fallback": [], "concurrency": 1}}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """Seconds ``fn()`` took, and what it returned."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def sync_once(ws: Path, ov: dict[str, Any], force: bool = False) -> Any:
    with MemoryIndex.open(ws, overrides=ov) as idx:
        return idx.sync(force=force)


def bench_changed(root: Path, n: int, kind: str, base_url: str | None, repeat: int,
                  lines: int = 14, in_place: bool = False) -> tuple[float, float]:
    """Median seconds of (a plain sync after all n files changed, forced rebuild of them).

    The plain sync picks its own strategy: with most files changed it rebuilds aside
    (``sync.mostly_changed``). ``in_place`` turns that rule off to time the in-place update.
    """
    ws = root / f"changed-{kind}{'-inplace' if in_place else ''}"
    ws.mkdir()
    ov = overrides_for(kind, base_url)
    write_files(ws, n, 0, lines)
    sync_once(ws, ov)
    incr, full = [], []
    round_ = 0
    for _ in range(repeat):
        round_ += 1
        write_files(ws, n, round_, lines)
        share = sync_mod.REBUILD_SHARE
        if in_place:
            sync_mod.REBUILD_SHARE = float("inf")
        try:
            secs, rep = timed(lambda: sync_once(ws, ov))
        finally:
            sync_mod.REBUILD_SHARE = share
        incr.append(secs)
        assert rep.files_indexed == n, rep
        assert rep.full != in_place, rep
        round_ += 1
        write_files(ws, n, round_, lines)
        secs, rep = timed(lambda: sync_once(ws, ov, force=True))
        full.append(secs)
        assert rep.full and rep.files_indexed == n, rep
    return statistics.median(incr), statistics.median(full)


def walk_stat(root: Path) -> int:
    n = 0
    for d, _dirs, files in os.walk(root):
        for f in files:
            os.stat(os.path.join(d, f))
            n += 1
    return n


def bench_noop(root: Path, n: int, repeat: int) -> tuple[float, float]:
    """Median seconds of (a no-op index of n files: open + sync, the bare walk + stat)."""
    ws = root / "noop"
    ws.mkdir()
    ov = overrides_for("none", None)
    write_files(ws, n, 0, lines=3)
    sync_once(ws, ov)
    noop, walk = [], []
    for _ in range(repeat):
        walk.append(timed(lambda: walk_stat(ws))[0])
        secs, rep = timed(lambda: sync_once(ws, ov))
        noop.append(secs)
        assert not rep.wrote_anything and rep.files_unchanged == n, rep
    return statistics.median(noop), statistics.median(walk)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=1500)
    ap.add_argument("--noop-files", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lines", type=int, default=14,
                    help="lines per changed file (14: small notes; 300: ~10 chunks each)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["none", "vectors", "noop"])
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    rows: list[tuple[str, float, float, str]] = []
    try:
        with HashEmbedServer(dims=DIMS) as server:
            for kind in ("none", "vectors"):
                if kind in args.skip:
                    continue
                for in_place in (False, True):
                    inc, full = bench_changed(root, args.files, kind, server.base_url,
                                              args.repeat, args.lines, in_place)
                    how = "in place" if in_place else "sync"
                    rows.append((f"{args.files} changed ({args.lines} lines), {kind}: "
                                 f"{how} vs --force", inc, full,
                                 "—" if in_place else "≤ 1.2×"))
        if "noop" not in args.skip:
            noop, walk = bench_noop(root, args.noop_files, args.repeat)
            rows.append((f"no-op index of {args.noop_files} files vs os.walk + stat", noop, walk,
                         "≤ 3×"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'what':<62} {'ours':>8} {'limit':>8} {'ratio':>7}  goal")
    for what, ours, limit, goal in rows:
        print(f"{what:<62} {ours:7.2f}s {limit:7.2f}s {ours / limit:6.2f}×  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
