"""The workbench's pages at scale (issue #26 item 1): time to a first render, time per interaction
and peak memory, each page against the same page on a small workspace in the same run.

Each (page, workspace) runs in a fresh process, as a person meets it in a fresh server: Streamlit's
AppTest opens the app (imports, the home page, the sidebar), switches to the page (its first
render: on a writable index, the first sync), then makes the page's interactions one at a time:

* Chunks: the next page of files, another file, a text filter (a scan of every chunk, progress
  shown), the filter's second page (remembered);
* Embedding map: the first picture (a fixed sample of at most 20,000 points, PCA; UMAP is fitted
  in the background meanwhile and is off here), another colouring, a query with its hits, a
  second query (the first one also pays the engine's one-time check of the mapped vectors);
* Search & tune: two queries (both legs' candidates), then two slider steps (re-fused only);
* Evaluate and Promotion: the first render.

Baselines in the same run: the same steps on a small synthetic workspace (``--base-chunks``,
built once in the cache with the same hash embedding server), and a bare Streamlit page (one
title, one line) opened the same way. Wall and CPU time (``process_time`` of the child: AppTest
runs the script in it) per step; the child's peak RSS after the app opened and at the end.

    .venv/bin/python benchmarks/bench_pages.py                                 # the 100k index
    .venv/bin/python benchmarks/bench_pages.py --workspace <cache>/bench-scale/ws-1000000-g1 \\
        --base-url http://127.0.0.1:47851/v1 --readonly                        # 1M, read-only

``--readonly`` opens the index read-only and never syncs it (``$MEMORY_WORKBENCH_READONLY``):
for an index another process owns. ``--base-url`` names the hash server the index was built
with (a fixed port: it is part of the provider's identity); one is started there if nothing
listens.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PAGES = {"chunks": "pages/chunks.py", "map": "pages/embedding_map.py",
         "search": "pages/search.py", "evaluate": "pages/evaluate.py",
         "promotion": "pages/promotion.py"}
BARE_APP = 'import streamlit as st\n\nst.title("bare")\nst.write("nothing")\n'
TARGET_S = 2.0


def _ov(base_url: str) -> dict[str, Any]:
    return {"provider": {"provider": "openai", "base_url": base_url, "model": "hash-384",
                         "fallback": [], "batch_bytes": 64_000}}


# ----------------------------------------------------------------------------- the child


def _maxrss_mb() -> float:
    """This process's peak RSS: ``VmHWM`` (its own, from the exec on; ``ru_maxrss`` would
    count the parent's RSS inherited at fork), else ``ru_maxrss``."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _listed(at: Any) -> list[str]:
    """The paths of the Chunks page's file table."""
    return list(next(d.value for d in at.dataframe if "chunks" in d.value.columns)["path"])


def _steps(page: str) -> list[tuple[str, Any]]:
    """The interactions of ``page``: (label, function of the AppTest that makes it)."""
    if page == "chunks":
        return [("next page", lambda at: at.number_input(key="chunks_page").set_value(2)),
                ("another file", lambda at: at.selectbox(key="chunks_file").set_value(
                    _listed(at)[3])),
                ("text filter (scan)", lambda at: at.text_input(key="chunks_filter").input(
                    "backup")),
                ("filter, page 2", lambda at: at.number_input(key="chunks_page").set_value(2))]
    if page == "map":
        return [("colour by source", lambda at: at.selectbox(key="map_colour").set_value(
                    "source")),
                ("a query and its hits", lambda at: at.text_input(key="map_query").input(
                    "why did the backup fail")),
                ("another query", lambda at: at.text_input(key="map_query").input(
                    "who is on call this week"))]
    if page == "search":
        return [("a query (candidates)", lambda at: at.text_input(key="search_query").input(
                    "why did the backup fail")),
                ("another query", lambda at: at.text_input(key="search_query").input(
                    "who is on call this week")),
                ("minScore slider", lambda at: at.slider(key="t_min_score").set_value(0.2)),
                ("vectorWeight slider", lambda at: at.slider(key="t_vector_weight").set_value(
                    0.5))]
    return []


def child(script: str, page: str) -> dict[str, Any]:
    """Open ``script`` (the app, or the bare page) in AppTest, go to ``page``, interact."""
    from streamlit.testing.v1 import AppTest

    out: dict[str, Any] = {"steps": []}

    def timed(label: str, fn: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        got = fn()
        out["steps"].append({"step": label, "wall_s": time.perf_counter() - w,
                             "cpu_s": time.process_time() - c})
        if got is not None and getattr(got, "exception", None):
            raise RuntimeError(f"{page} {label}: {got.exception}")
        return got

    at = AppTest.from_file(script, default_timeout=1800)
    timed("open the app", at.run)
    out["rss_open_mb"] = _maxrss_mb()
    if page != "bare":
        timed("first render", lambda: at.switch_page(PAGES[page]).run())
        for label, act in _steps(page):
            timed(label, lambda act=act: act(at).run())
    else:
        timed("rerun", at.run)
    out["rss_peak_mb"] = _maxrss_mb()
    return out


# ----------------------------------------------------------------------------- the parent


def _listening(base_url: str) -> bool:
    host_port = base_url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, int(port))) == 0


def _config_provider(ws: Path) -> str | None:
    """The hash server the workspace's own config names, if any."""
    cfg = ws / "memory-workbench.toml"
    if not cfg.is_file():
        return None
    import tomllib

    url = tomllib.loads(cfg.read_text(encoding="utf-8")).get("provider", {}).get("base_url")
    return str(url) if url else None


def base_workspace(chunks: int, base_url: str) -> Path:
    """A small synthetic workspace indexed with the same server, built once in the cache."""
    from scale_support import make_workspace

    from memory_core import MemoryIndex
    from memory_core.base.locations import cache_root

    port = base_url.rsplit(":", 1)[1].split("/", 1)[0]  # the server is part of its identity
    ws = make_workspace(cache_root() / "bench-pages" / f"ws-{chunks}-{port}", chunks)
    with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
        idx.sync()
    return ws


def run_child(script: Path, page: str, ws: Path | None, base_url: str, readonly: bool,
              cache: Path, code: Path = ROOT) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(code), "MEMORY_WORKBENCH_CACHE": str(cache),
           "MEMORY_WORKBENCH_NO_UMAP": "1", "MEMORY_WORKBENCH_NO_WATCH": "1",
           "MEMORY_WORKBENCH_PROVIDER": "",
           "MEMORY_WORKBENCH_OVERRIDES": json.dumps(_ov(base_url)),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if ws is not None:
        env["MEMORY_WORKBENCH_WORKSPACE"] = str(ws)
    if readonly:
        env["MEMORY_WORKBENCH_READONLY"] = "1"
    proc = subprocess.run([sys.executable, __file__, "--child", str(script), page],
                          env=env, capture_output=True, text=True, cwd=str(code))
    if proc.returncode:
        raise SystemExit(f"{page} on {ws}: the child failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workspace", type=Path, default=None,
                    help="default: the 100k benchmark workspace in the cache")
    ap.add_argument("--base-url", default=None,
                    help="the hash server the index was built with (default: the one its "
                         "config names)")
    ap.add_argument("--readonly", action="store_true", help="open it read-only, never sync")
    ap.add_argument("--pages", default=",".join(PAGES))
    ap.add_argument("--base-chunks", type=int, default=3000)
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="the tree whose app.py and pages run (an A/B: an old checkout)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return

    from memory_core.base.locations import cache_root

    ws = (args.workspace or cache_root() / "bench-scale" / "ws-100000-g1").resolve()
    base_url = args.base_url or _config_provider(ws)
    if not base_url:
        raise SystemExit(f"{ws}: its config names no embedding server: pass --base-url")
    server = None
    if not _listening(base_url):
        from scale_support import HashEmbedServer

        port = int(base_url.rsplit(":", 1)[1].split("/", 1)[0])
        server = HashEmbedServer(port).__enter__()
    try:
        small = base_workspace(args.base_chunks, base_url)
        report = measure(ws, small, base_url, args)
    finally:
        if server is not None:
            server.__exit__(None, None, None)
    if args.json:
        print(json.dumps(report, indent=1))


def measure(ws: Path, small: Path, base_url: str, args: argparse.Namespace) -> dict[str, Any]:
    from memory_core import MemoryIndex

    with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
        idx.readonly = args.readonly
        files = sum(idx.file_page(limit=0).sources.values())
        chunks = idx.embedding_sample(0).total
    load = os.getloadavg()
    print(f"workspace {ws}: {files:,} files, {chunks:,} chunks with a vector"
          f"{' (read-only)' if args.readonly else ''}; baseline {small.name}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)
    app = args.code.resolve() / "app.py"
    report: dict[str, Any] = {"workspace": str(ws), "files": files, "chunks": chunks,
                              "load": load, "pages": {}}
    with tempfile.TemporaryDirectory(prefix="bench-pages-") as tmp:
        bare = Path(tmp) / "bare.py"
        bare.write_text(BARE_APP, encoding="utf-8")
        got = run_child(bare, "bare", None, base_url, False, Path(tmp) / "c0")
        report["bare"] = got
        bare_s = got["steps"][0]["wall_s"]
        print(f"\nbare Streamlit page: open {bare_s * 1000:.0f} ms, rerun "
              f"{got['steps'][1]['wall_s'] * 1000:.0f} ms, peak RSS {got['rss_peak_mb']:.0f} MB")
        hdr = (f"{'page':<10} {'step':<22} {'small ms':>9} {'big ms':>9} {'big cpu':>8} "
               f"{'ratio':>7}  {'≤ 2 s':<5}")
        print("\n" + hdr + "\n" + "-" * len(hdr))
        for i, page in enumerate(p for p in args.pages.split(",") if p):
            # each page on both workspaces in a fresh cache (a first visit: no map coordinates)
            a = run_child(app, page, small, base_url, False, Path(tmp) / f"s{i}", args.code)
            b = run_child(app, page, ws, base_url, args.readonly, Path(tmp) / f"b{i}",
                          args.code)
            report["pages"][page] = {"small": a, "big": b}
            for sa, sb in zip(a["steps"], b["steps"], strict=True):
                ratio = sb["wall_s"] / sa["wall_s"] if sa["wall_s"] else float("nan")
                ok = "yes" if sb["wall_s"] <= TARGET_S else "NO"
                print(f"{page:<10} {sb['step']:<22} {sa['wall_s'] * 1000:9.0f} "
                      f"{sb['wall_s'] * 1000:9.0f} {sb['cpu_s'] * 1000:8.0f} {ratio:6.2f}×  "
                      f"{ok:<5}", flush=True)
            print(f"{page:<10} {'peak RSS (MB)':<22} {a['rss_peak_mb']:9.0f} "
                  f"{b['rss_peak_mb']:9.0f} {'':>8} {b['rss_peak_mb'] / a['rss_peak_mb']:6.2f}×"
                  f"  (after opening the app: {a['rss_open_mb']:.0f} / {b['rss_open_mb']:.0f})",
                  flush=True)
    return report


if __name__ == "__main__":
    main()
