"""Scale: issue #10's table on synthetic 1k / 10k / 100k-chunk workspaces, with its baselines.

Every row is measured next to the limit it is compared with, in the same run on the same machine
(a shared two-core machine is noisy: ratios, not absolute times, are what to read). Workspaces
and their indexes are built once under ``<cache root>/bench-scale`` (the 100k build takes tens of
minutes) and reused; vectors come from a real OpenAI-compatible server on 127.0.0.1
(``scale_support.HashEmbedServer``: deterministic hashed bag-of-words vectors, 384 dims).

    .venv/bin/python benchmarks/bench_scale.py                      # 1k, 10k, 100k
    .venv/bin/python benchmarks/bench_scale.py --sizes 1k,10k --skip-cold --skip-concurrency
    .venv/bin/python benchmarks/bench_scale.py --sizes 100k --vector-sizes 1m --sync-memory

The ``process:`` rows (``--skip-process`` leaves them out) run the ``memory-core`` entry point
as a user does: a no-op ``index`` against a process that walks the tree, and the marginal query
of ``search --batch``; for them the workspace's config file names the hash server.

Slopes: for rows measured at several sizes, ``cost ∝ N^slope`` fitted by least squares on
log(cost) vs log(N).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_support import (  # noqa: E402
    DIMS,
    HashEmbedServer,
    bench_queries,
    hash_embed,
    make_workspace,
)

from memory_core import MemoryIndex, fuse  # noqa: E402
from memory_core.base.locations import cache_root  # noqa: E402
from memory_core.read.fusion import rows_needed  # noqa: E402

SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000, "300k": 300_000, "1m": 1_000_000}
ROWS: list[dict[str, object]] = []


def _ov(base_url: str) -> dict[str, object]:
    # 64 kB requests (~40 chunks) instead of 8 kB (~5): the hash server's cost per request
    # (a connection, a thread) was most of its time; neither is part of the index's identity
    return {"provider": {"provider": "openai", "base_url": base_url, "model": "hash-384",
                         "fallback": [], "batch_bytes": 64_000}}


def median_ms(fn, reps: int) -> float:  # type: ignore[no-untyped-def]
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ts)


def row(what: str, n: int | None, now: float, unit: str, base: float | None, base_what: str,
        goal: str, ok: bool | None) -> None:
    ratio = (now / base) if base else None
    ROWS.append({"what": what, "n": n, "now": now, "unit": unit, "base": base,
                 "base_what": base_what, "ratio": ratio, "goal": goal, "ok": ok})
    r = f"{ratio:7.2f}×" if ratio is not None else "      —"
    verdict = "" if ok is None else ("met" if ok else "NOT MET")
    nn = f"{n:>7}" if n else "      —"
    b = f"{base:10.1f}" if base is not None else "         —"
    print(f"{what:<46} {nn} {now:10.1f} {unit:<6} {b}  {base_what:<34} {r}  {goal:<8} "
          f"{verdict}", flush=True)


def build(size: str, base_url: str) -> Path:
    ws = make_workspace(cache_root() / "bench-scale" / f"ws-{SIZES[size]}-g1", SIZES[size])
    with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
        t0 = time.perf_counter()
        rep = idx.sync()
        if rep.wrote_anything:
            sec = time.perf_counter() - t0
            print(f"  built {size}: {rep.chunks_written} chunks in {sec:.0f} s "
                  f"({rep.chunks_written / sec:.0f} chunks/s, load average "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
    return ws


def bench_search(size: str, ws: Path, base_url: str, nq: int) -> float:
    queries = bench_queries(nq)
    qvecs = hash_embed(queries)
    with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
        t0 = time.perf_counter()
        rep = idx.sync()  # no-op; writes the sidecar the first time
        if (time.perf_counter() - t0) > 2:
            print(f"  sidecar for {size} written in {time.perf_counter() - t0:.0f} s")
        del rep
        st = idx.store
        vm = st.vector_matrix()
        assert vm is not None, "no sidecar"
        n = vm.rows
        mat = np.array(vm.matrix)  # an in-memory copy: the baseline's matrix
        s = idx.settings()

        def exact(q: np.ndarray) -> np.ndarray:
            sims = mat @ q
            top = np.argpartition(-sims, 23)[:24]
            return top[np.argsort(-sims[top])]

        # search's own path (the store picks the leg's path: the sidecar here), and the
        # vector leg's reference path (sqlite-vec) alone, which answers while no fresh sidecar
        # exists
        from memory_core.read.search import fetch_candidates

        def one(engine: str, q: str, qv: np.ndarray) -> tuple[float, float, float]:
            t = time.perf_counter()
            if engine == "sqlite-vec":
                st._vec0_search(qv, 200, None)
                ms = (time.perf_counter() - t) * 1000
                return ms, 0.0, ms
            # as memory_search fetches: the rows of the cut its fusion reads
            c = fetch_candidates(st, idx.choice.provider, q, s, query_vector=qv,
                                 rows_for=rows_needed(q, s))
            fuse(c, s)
            return ((time.perf_counter() - t) * 1000, c.timings_ms.get("keyword_ms", 0.0),
                    c.timings_ms.get("vector_ms", 0.0))

        engines = (("auto", "hybrid search/query, default path (sidecar, exact)"),
                   ("sqlite-vec", "vector leg alone, sqlite-vec (reference path)"))
        for q, qv in zip(queries, qvecs, strict=True):  # warm the page cache
            one("auto", q, qv)
        # Interleaved: for each query the baseline and every engine run back to back, three
        # rounds, so a burst of load from the machine's other users hits all of them alike.
        # The baseline is the median of 3 calls in a row (BLAS threads awake, caches warm);
        # each engine is one call, as a query is: that errs against us, never for us.
        base_ms: list[float] = []
        runs: dict[str, list[tuple[float, float, float]]] = {e: [] for e, _ in engines}
        for _ in range(3):
            for q, qv in zip(queries, qvecs, strict=True):
                base_ms.append(median_ms(lambda qv=qv: exact(qv), 3))
                for engine, _ in engines:
                    runs[engine].append(one(engine, q, qv))
        base = statistics.median(base_ms)
        for engine, label in engines:
            tot, kw, vec = (statistics.median(x[i] for x in runs[engine]) for i in range(3))
            # sqlite-vec answers only while an index has no fresh vector sidecar (every sync
            # that commits writes one): measured, but not the path the goal is about
            fallback = engine == "sqlite-vec"
            row(label, n, tot, "ms", base,
                "exact numpy top-24, same matrix", "—" if fallback else "≤ 2×",
                None if fallback else tot <= 2 * base)
            print(f"{'':<8}legs: vector {vec:.1f} ms, keyword {kw:.1f} ms"
                  + ("; used only while no fresh vector sidecar exists" if fallback else ""))
        # the old per-process cost: a matrix built from SQLite blobs
        t = time.perf_counter()
        st.embeddings()
        blobs_ms = (time.perf_counter() - t) * 1000
    new_process(size, ws, base_url, n, base, blobs_ms, mat.nbytes)
    return base


_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import numpy as np
from memory_core import MemoryIndex
ws, base_url, q, mode = sys.argv[1:5]
ov = {"provider": {"provider": "openai", "base_url": base_url, "model": "hash-384", "fallback": []}}
qv = np.frombuffer(bytes.fromhex(q), dtype=np.float32)
first = second = 0.0
def status_kb(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))
with MemoryIndex.open(ws, overrides=ov) as idx:
    idx.store  # open the SQLite file first: the row is about the vectors
    assert idx.store.vector_matrix() is not None  # mapped, not read
    rss0 = hwm0 = 0
    if mode == "search":
        # reset the high-water mark (Linux >= 4.0): what the process did before (imports,
        # opening the index) may have peaked higher than the search itself
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        rss0 = status_kb("VmRSS")
        t1 = time.perf_counter()
        hits = idx.store.vector_search(qv, 200)
        first = (time.perf_counter() - t1) * 1000
        t2 = time.perf_counter()
        idx.store.vector_search(qv, 200)
        second = (time.perf_counter() - t2) * 1000
        hwm0 = status_kb("VmHWM")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"first_ms": first, "second_ms": second, "maxrss_kb": rss, "rss0_kb": rss0,
                  "hwm_kb": hwm0}))
"""


def new_process(size: str, ws: Path, base_url: str, n: int, base_ms: float, blobs_ms: float,
                matrix_bytes: int) -> None:
    """First vector search in a fresh process, and the peak memory a search adds.

    Peak memory: in a fresh process that imports, opens the index and maps the sidecar, the
    high-water mark is reset (``/proc/self/clear_refs``), then two searches run (numpy exact
    path); the peak RSS during them minus the RSS before them is what searching added. (The
    process-wide ``ru_maxrss`` said 0 MB: opening the index had already peaked higher than the
    search did on top of the resident set.) The mapped matrix's pages count once they are read,
    so the goal compares with the matrix.
    """
    qv = hash_embed(["backup restore on the replica"])[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def child(mode: str) -> dict[str, float] | None:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(ws), base_url,
                              qv.tobytes().hex(), mode],
                             capture_output=True, text=True, env=env, timeout=600)
        if out.returncode:
            print(out.stderr[-2000:])
            return None
        return json.loads(out.stdout.strip().splitlines()[-1])

    r, m = child("search"), child("map")
    if r is None or m is None:
        return
    row("new process: first numpy vector search", n, r["first_ms"], "ms", blobs_ms,
        "old: matrix from SQLite blobs", "≤ 0.1×", r["first_ms"] <= 0.1 * blobs_ms)
    peak = (r["hwm_kb"] - r["rss0_kb"]) * 1024 / 1e6
    row("peak memory added by a numpy-path search", n, peak, "MB", matrix_bytes / 1e6,
        "the matrix itself", "≤ 1.3×", peak <= 1.3 * matrix_bytes / 1e6)
    print(f"{'':<8}RSS before the search {r['rss0_kb'] / 1024:.0f} MB, peak during it "
          f"{r['hwm_kb'] / 1024:.0f} MB; whole-process peak: searching "
          f"{r['maxrss_kb'] / 1024:.0f} MB, only mapping {m['maxrss_kb'] / 1024:.0f} MB")


def bench_noop(size: str, ws: Path, base_url: str) -> None:
    def walk() -> None:
        for dirpath, _, files in os.walk(ws):
            for f in files:
                os.stat(os.path.join(dirpath, f))

    base = median_ms(walk, 3)
    with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
        idx.sync()

        def noop() -> None:
            with MemoryIndex.open(ws, overrides=_ov(base_url)) as i2:
                r = i2.sync()
                assert not r.wrote_anything

        now = median_ms(noop, 3)
        files = idx.status().files
    row(f"no-op index ({files} files)", None, now, "ms", base, "os.walk + stat of the tree",
        "≤ 3×", now <= 3 * base)
    # The row above is open + sync in this process (what the sync costs, and what bench_sync.py
    # measures). A `memory-core index` run adds Python start-up and the imports, a fixed cost
    # whatever the number of files: shown here as two fresh processes, side by side.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    walk_code = (f"import os\nfor d, _, fs in os.walk({str(ws)!r}):\n"
                 "    for f in fs: os.stat(os.path.join(d, f))")
    noop_code = ("from memory_core import MemoryIndex\n"
                 f"with MemoryIndex.open({str(ws)!r}, overrides={_ov(base_url)!r}) as i:\n"
                 "    assert not i.sync().wrote_anything")

    def proc(code: str) -> float:
        return median_ms(lambda: subprocess.run([sys.executable, "-c", code], env=env,
                                                check=True, timeout=600), 3)

    pw, pn = proc(walk_code), proc(noop_code)
    print(f"{'':<8}as fresh processes (start-up and imports included): no-op index "
          f"{pn:.0f} ms, os.walk + stat {pw:.0f} ms ({pn / pw:.2f}×)")


# --------------------------------------------------------------------------- whole processes

def _cli() -> list[str]:
    """The ``memory-core`` entry point a user runs (``python -m memory_core`` without it)."""
    script = Path(sys.executable).with_name("memory-core")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memory_core"]


def _cli_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_bytecode() -> None:
    """Byte-compile the package once, as ``pip install`` does: with PYTHONDONTWRITEBYTECODE
    set (as here) every process would otherwise compile ~60 modules from source (~85 ms)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "memory_core")],
                   env=_cli_env(), check=True, capture_output=True, timeout=600)


def cli_workspace(ws: Path, base_url: str) -> None:
    """Give the workspace's config file the provider the benchmark passes as overrides, so the
    CLI (which reads only the file) opens the same index: the merged configuration is equal."""
    (ws / "memory-workbench.toml").write_text(
        '[sources]\nsources = ["memory"]\n\n[provider]\nprovider = "openai"\n'
        f'base_url = "{base_url}"\nmodel = "hash-384"\nfallback = []\n', encoding="utf-8")


def import_ms(args: list[str]) -> tuple[float, list[str]]:
    """Total of ``python -X importtime``'s top-level imports of one CLI run (start-up's own
    ``site``/``encodings`` left out), and which heavy modules it imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "memory_core", *args],
                         env=_cli_env(), capture_output=True, text=True, timeout=600)
    total, heavy = 0.0, []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cum, name = line.split("|")
        if not name.startswith("  ") and name.strip() not in ("site", "encodings"):
            total += int(cum) / 1000
        if name.strip() in ("numpy", "pydantic", "torch", "sentence_transformers"):
            heavy.append(name.strip())
    return total, heavy


def bench_process_noop(size: str, ws: Path, base_url: str, runs: int = 11) -> None:
    """``memory-core index`` with nothing to do, as a fresh process, against a fresh Python
    process that walks and stats the tree (both: interpreter start-up included); ``runs``
    each, interleaved (the order alternated), medians of the wall time and, beside it, of the
    CPU time (the children's ``rusage``: less moved by other work on the machine)."""
    cli_workspace(ws, base_url)
    env = _cli_env()
    walk_code = (f"import os\nfor d, _, fs in os.walk({str(ws)!r}):\n"
                 "    for f in fs: os.stat(os.path.join(d, f))")
    noop = [*_cli(), "index", "--workspace", str(ws), "--no-progress"]
    out = subprocess.run(noop, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and " 0 indexed" in out.stdout, out.stdout + out.stderr

    def timed(cmd: list[str]) -> tuple[float, float]:
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
        wall = (time.perf_counter() - t) * 1000
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000

    walk_cmd = [sys.executable, "-c", walk_code]
    walks, noops = [], []
    for i in range(runs):
        for cmd, into in ([(walk_cmd, walks), (noop, noops)][::1 if i % 2 else -1]):
            into.append(timed(cmd))
    pw, pn = (statistics.median(w for w, _ in walks), statistics.median(w for w, _ in noops))
    cw, cn = (statistics.median(c for _, c in walks), statistics.median(c for _, c in noops))
    files = sum(len(fs) for _, _, fs in os.walk(ws))
    row(f"process: no-op `index` ({files} files)", None, pn, "ms", pw,
        "process: os.walk + stat", "≤ 3×", pn <= 3 * pw)
    print(f"{'':<8}CPU (children's rusage, medians of {runs}): no-op index {cn:.1f} ms, "
          f"os.walk + stat {cw:.1f} ms ({cn / cw:.2f}×); load average {os.getloadavg()[0]:.1f}")
    imp, heavy = import_ms(["index", "--workspace", str(ws), "--no-progress"])
    row("process: imports of that no-op `index`", None, imp, "ms", 150.0, "the import budget",
        "≤ 150 ms", imp <= 150)
    print(f"{'':<8}heavy modules imported: {', '.join(heavy) or 'none'} (pydantic: the "
          f"workspace has a config file); CPU of the no-op index's imports measured by "
          f"`-X importtime`, wall time, so load inflates it")


def bench_process_batch(size: str, ws: Path, base_url: str, nq: int, base_ms: float) -> None:
    """The marginal cost of one query in ``memory-core search --batch``: two fresh processes,
    one answering 1 query and one answering ``3 × nq`` (the benchmark's queries three times),
    ``(t_many - t_one) / (many - 1)``; the query vectors come from the hash server over HTTP
    (part of what a query costs). Three pairs, interleaved, medians."""
    cli_workspace(ws, base_url)
    queries = bench_queries(nq) * 3
    env = _cli_env()
    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp) / "one.jsonl", Path(tmp) / "many.jsonl"
        one.write_text(json.dumps({"qid": 0, "query": queries[0]}) + "\n")
        many.write_text("".join(json.dumps({"qid": i, "query": q}) + "\n"
                                for i, q in enumerate(queries)))
        for record in (False, True):
            extra = [] if record else ["--no-record"]

            def timed(f: Path, extra: list[str] = extra) -> float:
                cmd = [*_cli(), "search", "--batch", str(f), "--workspace", str(ws), *extra]
                t = time.perf_counter()
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
                ms = (time.perf_counter() - t) * 1000
                assert out.returncode == 0, out.stderr[-2000:]
                return ms

            timed(one)  # warm: page cache, a first search's sidecar check
            marg = []
            for _ in range(3):
                t1, tn = timed(one), timed(many)
                marg.append((tn - t1) / (len(queries) - 1))
            label = "recalls recorded" if record else "--no-record"
            row(f"process: `search --batch`, marginal query ({label})", None,
                statistics.median(marg), "ms", base_ms, "exact numpy top-24, same matrix",
                "≤ 2×", statistics.median(marg) <= 2 * base_ms)


def _hwm_reset() -> int:
    """Reset this process's RSS high-water mark (Linux >= 4.0); the RSS now, in kB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_kb("VmRSS")


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key + ":"))


def bench_vectors_only(size: str, seed_ws: Path, base_url: str, nq: int) -> None:
    """The vector leg at a size no whole index was built for here (``--vector-sizes 1m``).

    Without a whole index of that size (``--sizes 1m`` builds one: 36 min here at load ~6,
    docs/performance.md), this row takes the engine's own vector sidecar of ``SIZES[size]`` rows:
    each row the normalised sum of two random rows of the 100k index's matrix plus noise (the
    hashed vectors' neighbourhoods, not uniform noise), written by ``vectors.write`` (as a sync
    writes it), mapped by ``vectors.load`` and searched exactly for the leg's pool (200), against
    an exact numpy top-24 over an in-memory copy, interleaved as in :func:`bench_search`. The
    peak memory added by writing the sidecar and by the first searches is stated."""
    from memory_core.read.search import POOL
    from memory_core.storage import vectors

    with MemoryIndex.open(seed_ws, overrides=_ov(base_url)) as idx:
        vm0 = idx.store.vector_matrix()
        assert vm0 is not None
        seed = np.array(vm0.matrix)
    n, d = SIZES[size], seed.shape[1]
    rng = np.random.default_rng(7)
    mat = np.empty((n, d), np.float32)
    for lo in range(0, n, 100_000):
        hi = min(n, lo + 100_000)
        a, b = rng.integers(0, len(seed), hi - lo), rng.integers(0, len(seed), hi - lo)
        blk = seed[a] + seed[b] + rng.normal(0, 0.02, (hi - lo, d)).astype(np.float32)
        mat[lo:hi] = blk / np.linalg.norm(blk, axis=1, keepdims=True)
    del seed
    queries = hash_embed(bench_queries(nq))
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        db = Path(tmp) / "i.sqlite"
        rss0 = _hwm_reset()
        t = time.perf_counter()
        vectors.write(db, "bench", np.arange(1, n + 1), [f"c{i:07d}" for i in range(n)],
                      ["memory"] * n, mat)
        write_s = time.perf_counter() - t
        write_mb = (_status_kb("VmHWM") - rss0) / 1024
        vm = vectors.load(db, "bench")
        assert vm is not None
        rss1 = _hwm_reset()
        t = time.perf_counter()
        vm.search(queries[0], POOL)  # the first: verifies every block of the mapped matrix
        first_ms = (time.perf_counter() - t) * 1000
        first_mb = (_status_kb("VmHWM") - rss1) / 1024

        def exact(q: np.ndarray) -> np.ndarray:
            sims = mat @ q
            top = np.argpartition(-sims, 23)[:24]
            return top[np.argsort(-sims[top])]

        base_ms, leg_ms = [], []
        for _ in range(3):
            for q in queries:
                base_ms.append(median_ms(lambda q=q: exact(q), 3))
                t = time.perf_counter()
                vm.search(q, POOL)
                leg_ms.append((time.perf_counter() - t) * 1000)
        base, leg = statistics.median(base_ms), statistics.median(leg_ms)
    row("vector leg alone (sidecar, exact, pool 200)", n, leg, "ms", base,
        "exact numpy top-24, same matrix", "≤ 2×", leg <= 2 * base)
    print(f"{'':<8}matrix {mat.nbytes / 1e6:.0f} MB; writing the sidecar {write_s:.1f} s, "
          f"peak memory added {write_mb:.0f} MB; first search (every block checked) "
          f"{first_ms:.0f} ms, peak memory added {first_mb:.0f} MB (the mapped pages)")


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _peak(fn):  # type: ignore[no-untyped-def]
    """``fn()``'s result, the peak memory it added (MiB: ``VmHWM`` after it minus ``VmRSS``
    before, the mark reset), its wall and CPU seconds (this process's threads)."""
    rss0, c0, t0 = _hwm_reset(), _cpu_s(), time.perf_counter()
    out = fn()
    sec, cpu = time.perf_counter() - t0, _cpu_s() - c0
    return out, (_status_kb("VmHWM") - rss0) / 1024, sec, cpu


def bench_sync_memory(size: str, ws: Path, base_url: str, files: int = 10) -> None:
    """Peak memory a sync adds when ``files`` diaries changed (the daily case on a big index):
    their chunks re-embedded and written, the vector sidecar updated (rows kept copied from the
    previous one block by block, the changed rows read from the index), the postings updated by
    delta. In this process, high-water mark reset before the sync. Then each sidecar is written
    whole from the index, measured alone: the vector sidecar (deleted first) and the keyword
    postings (FTS5 read whole, as ``index --verify`` and the first build do); then the files are
    put back and synced again (the workspace stays the generated one)."""
    from memory_core.storage import postings, vectors
    from memory_core.storage.store import Store

    paths = sorted((ws / "memory").glob("*.md"))[:files]
    saved = {p: p.read_bytes() for p in paths}
    try:
        for p in paths:
            p.write_bytes(saved[p] + b"\n- A line added for the sync-memory row.\n")
        with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
            rep, peak, sec, cpu = _peak(idx.sync)
            store_path = idx.store_path
        # opened as a sync opens it (no whole-FTS-table read: a minute at 1M chunks)
        st = Store(store_path, fts_scan=False)
        vm = st.vector_matrix()
        matrix_mb = vm.matrix.nbytes / 2**20 if vm is not None else 0.0
        n = vm.rows if vm is not None else 0
        del vm
        st.close()
        vectors.sidecar_path(store_path).unlink()
        st = Store(store_path, fts_scan=False)  # nothing mapped
        try:
            _, whole, whole_sec, whole_cpu = _peak(st.refresh_vectors)
            _, post, post_sec, post_cpu = _peak(lambda: postings.refresh(st, force_full=True))
        finally:
            st.close()
    finally:
        for p, b in saved.items():
            p.write_bytes(b)
        with MemoryIndex.open(ws, overrides=_ov(base_url)) as idx:
            idx.sync()
    row(f"peak memory added by a sync of {files} changed files", n, peak, "MB",
        matrix_mb, "the matrix", "—", None)
    print(f"{'':<8}{rep.chunks_written} chunks written in {sec:.1f} s, CPU {cpu:.1f} s "
          f"(vector sidecar updated, postings by delta; load {os.getloadavg()[0]:.1f})")
    row("peak memory added by writing the vector sidecar whole", n, whole, "MB",
        matrix_mb, "the matrix", "—", None)
    print(f"{'':<8}from the index's blobs in {whole_sec:.1f} s, CPU {whole_cpu:.1f} s "
          "(the first build's write)")
    row("peak memory added by writing the postings whole", n, post, "MB",
        matrix_mb, "the matrix", "—", None)
    print(f"{'':<8}FTS5 read whole in {post_sec:.1f} s, CPU {post_cpu:.1f} s (the first "
          "build's and `index --verify`'s)")


_BUILD_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from memory_core import MemoryIndex
ws, ov = Path(sys.argv[1]), json.loads(sys.argv[2])
def kb(key):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))
marks = {}
def progress(stage, done, total):  # the build's writes are done when the postings read starts
    if stage == "keyword postings" and "hwm" not in marks:
        marks["hwm"] = kb("VmHWM")
with MemoryIndex.open(ws, overrides=ov) as idx:
    t = time.perf_counter()
    rep = idx.sync(progress=progress)
    sec = time.perf_counter() - t
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"chunks": rep.chunks_written, "full": rep.full, "sec": sec,
                  "cpu": r.ru_utime + r.ru_stime, "hwm_kb": kb("VmHWM"),
                  "writes_hwm_kb": marks.get("hwm", 0)}))
"""


def bench_build_memory(size: str, ws: Path, base_url: str) -> None:
    """A first build of ``ws`` into a temporary index, in a fresh process (its high-water mark
    is the build's): chunks/s, and the peak resident set when the writes are done (before the
    keyword postings' full read) and at the end."""
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        ov = {**_ov(base_url), "store": {"path": f"{tmp}/i.sqlite"}}
        out = subprocess.run([sys.executable, "-c", _BUILD_CHILD, str(ws), json.dumps(ov)],
                             capture_output=True, text=True, env=dict(os.environ,
                                                                      PYTHONPATH=str(ROOT)),
                             timeout=24 * 3600)
    if out.returncode:
        print(out.stderr[-2000:])
        return
    r = json.loads(out.stdout.strip().splitlines()[-1])
    rate = r["chunks"] / r["sec"]
    row("first build: peak RSS when its writes are done", r["chunks"], r["writes_hwm_kb"] / 1024,
        "MB", None, "", "—", None)
    row("first build: peak RSS, postings read included", r["chunks"], r["hwm_kb"] / 1024, "MB",
        None, "", "—", None)
    print(f"{'':<8}{r['chunks']} chunks in {r['sec']:.0f} s ({rate:.0f} chunks/s), CPU "
          f"{r['cpu']:.0f} s (the hash server's not included), load {os.getloadavg()[0]:.1f}")


def bench_indexing(size: str, ws: Path) -> None:
    """Chunks/s with an in-process provider that costs nothing vs keyword-only, into temp."""
    from memory_core.embeddings import ProviderChoice

    class Free:
        id = "openai"
        model = "hash-384"
        dims = DIMS
        max_input_tokens = 8192
        provider_key = "free"

        def __init__(self) -> None:
            self.cache: dict[str, np.ndarray] = {}

        def embed_documents(self, texts, progress=None):  # type: ignore[no-untyped-def]
            out = np.zeros((len(texts), DIMS), dtype=np.float32)
            out[:, 0] = 1.0
            out[np.arange(len(texts)), np.arange(len(texts)) % DIMS] += 1.0
            return out

        def embed_query(self, text):  # type: ignore[no-untyped-def]
            return self.embed_documents([text])[0]

    rates = {}
    for label, prov in (("free", Free()), ("none", None)):
        with tempfile.TemporaryDirectory() as tmp:
            idx = MemoryIndex.open(ws, overrides={"store": {"path": f"{tmp}/i.sqlite"}})
            idx._choice = ProviderChoice(prov, label)  # benchmark injection
            t = time.perf_counter()
            r = idx.sync()
            rates[label] = r.chunks_written / (time.perf_counter() - t)
            idx.close()
    row("indexing, zero-cost provider (chunks/s)", None, rates["free"], "c/s", rates["none"],
        "keyword-only indexing (chunks/s)", "≥ 0.5×", rates["free"] >= 0.5 * rates["none"])


def bench_mmr(reps: int) -> None:
    from bench_rerank import synthetic_candidates

    sys.path.insert(0, str(ROOT / "tests"))
    from dataclasses import replace

    from memory_core import profile_settings
    from memory_core.read.rerank import mmr_order

    cands = synthetic_candidates(200)
    s = replace(profile_settings("default"), max_results=50, candidate_multiplier=20)
    res = fuse(cands, s)
    hits = res.hits + res.below_gate
    texts, scores = [h.snippet for h in hits], [h.score for h in hits]
    from memory_core.read import rerank
    def cold() -> None:  # every snippet tokenised again, as for a query's first re-rank
        rerank._token_set.cache_clear()  # benchmark access: the cache is private
        mmr_order(texts, scores, 0.7)

    now = median_ms(cold, reps)
    warm = median_ms(lambda: mmr_order(texts, scores, 0.7), reps)
    cpu: list[float] = []
    for _ in range(reps):
        t = time.process_time()
        cold()
        cpu.append((time.process_time() - t) * 1000)
    try:
        from test_vectors_mmr import _loop_order  # the previous implementation, as the oracle
        old = median_ms(lambda: _loop_order(texts, scores, 0.7), 3)
    except ImportError:
        old = None
    row(f"MMR, 200 per leg ({len(hits)} hits)", None, now, "ms", 50.0, "the re-rank budget",
        "< 50 ms", now < 50)
    print(f"{'':<8}CPU {statistics.median(cpu):.1f} ms (wall above); snippets already "
          f"tokenised (the same chunks re-ranked again): {warm:.1f} ms")
    if old:
        print(f"{'':<8}the previous pair-by-pair loop, same input: {old:.0f} ms "
              f"({old / now:.0f}× slower)")


def bench_pca(ws10k: Path, base_url: str) -> None:
    from workbench.projection import fit_pca

    with MemoryIndex.open(ws10k, overrides=_ov(base_url)) as idx:
        idx.sync()
        vm = idx.store.vector_matrix()
        assert vm is not None
        x = np.array(vm.matrix[:10_000])
    now = median_ms(lambda: fit_pca(x, 2), 3)
    old = median_ms(lambda: np.linalg.svd(x.astype(np.float64) - x.mean(axis=0),
                                          full_matrices=False), 1)
    row("PCA of 10k points, first fit", 10_000, now, "ms", old, "old: full SVD, same run",
        "< 1 s", now < 1000)


def bench_cold(runs: int = 1) -> None:
    """Cold ``memory-core search`` with the local model vs ``import torch`` (CPU seconds)."""
    ws = cache_root() / "bench-scale" / "demo-local"
    if not (ws / ".memory").is_dir():
        shutil.rmtree(ws, ignore_errors=True)
        shutil.copytree(ROOT / "examples" / "demo-workspace", ws,
                        ignore=shutil.ignore_patterns(".memory"))
        subprocess.run([sys.executable, "-m", "memory_core", "index", "--workspace", str(ws)],
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True,
                       capture_output=True, timeout=900)

    def cpu(cmd: list[str]) -> tuple[float, float]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True,
                       capture_output=True, timeout=900)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

    _, torch_cpu = cpu([sys.executable, "-c", "import torch"])
    for label, args in (("hybrid", []), ("keyword-only", ["--provider", "none"])):
        wall, c = cpu([sys.executable, "-m", "memory_core", "search", "postgres upgrade plan",
                       "--workspace", str(ws), *args])
        if label == "hybrid":
            row("cold `memory-core search`, local model (CPU s)", None, c, "s", torch_cpu,
                "`python -c 'import torch'` CPU s", "≤ 1.5×", c <= 1.5 * torch_cpu)
            print(f"{'':<8}wall {wall:.1f} s")
        else:
            print(f"{'':<8}keyword-only cold search: {c:.1f} CPU s, wall {wall:.1f} s")


def bench_concurrency(texts_n: int, latency_ms: float) -> None:
    from memory_core.embeddings.openai import OpenAIEmbeddingProvider

    texts = bench_queries(texts_n, seed=11)
    texts = [t * 8 for t in texts]  # ~400-char inputs
    for lat in (0.0, latency_ms):
        with HashEmbedServer(0, latency_ms=lat) as srv:
            base = None
            for c in (1, 2, 4, 8):
                p = OpenAIEmbeddingProvider(srv.base_url, "hash-384", concurrency=c,
                                            max_batch_items=16, max_batch_bytes=8000)
                t = time.perf_counter()
                p.embed_documents(texts)
                rate = len(texts) / (time.perf_counter() - t)
                base = base or rate
                row(f"embedding throughput, concurrency {c}, +{lat:.0f} ms/request", None,
                    rate, "t/s", base, "concurrency 1", "—", None)


def slopes() -> None:
    groups: dict[str, list[tuple[int, float]]] = {}
    for r in ROWS:
        if r["n"] and isinstance(r["now"], float) and r["unit"] in ("ms", "MB"):
            groups.setdefault(str(r["what"]), []).append((int(r["n"]), float(r["now"])))
    print("\nGrowth with N (least-squares slope of log cost on log N):")
    for what, pts in groups.items():
        if len(pts) < 2:
            continue
        x = np.log([p[0] for p in pts])
        y = np.log([max(p[1], 1e-6) for p in pts])
        k = float(np.polyfit(x, y, 1)[0])
        print(f"  {what:<46} ∝ N^{k:.2f}   ({', '.join(f'{n}: {v:.1f}' for n, v in pts)})")


class _Shared:
    """Another bench process's server on the same port (its vectors are the same)."""

    def __init__(self, port: int) -> None:
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def __enter__(self) -> _Shared:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class _ServerProcess(_Shared):
    """The hash server in a process of its own: in this one it shared the GIL with the sync
    it served (its hashing and JSON were 60% of the 100k first build's wall time)."""

    def __init__(self, port: int) -> None:
        super().__init__(port)
        code = ("import sys, time\nsys.path.insert(0, sys.argv[2])\n"
                "from scale_support import HashEmbedServer\n"
                "with HashEmbedServer(int(sys.argv[1])):\n"
                "    print('ready', flush=True)\n    time.sleep(1e9)\n")
        self.proc = subprocess.Popen([sys.executable, "-c", code, str(port),
                                      str(Path(__file__).resolve().parent)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise OSError(f"hash server on port {port} did not start: {err[-500:]}")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _server(port: int) -> _Shared:
    try:
        return _ServerProcess(port)
    except OSError:
        print(f"(port {port} busy: using the hash server already there)")
        return _Shared(port)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1k,10k,100k")
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--port", type=int, default=47831, help="fixed: keeps the indexes valid")
    ap.add_argument("--index-sizes", default="10k", help="sizes for the indexing-rate row")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--skip-concurrency", action="store_true")
    ap.add_argument("--vector-sizes", default="",
                    help="sizes for the vector-leg-only rows (e.g. 1m; no whole index built)")
    ap.add_argument("--sync-memory", action="store_true",
                    help="also the peak memory of a sync that changed 10 files")
    ap.add_argument("--build-memory", action="store_true",
                    help="also a first build's peak memory and chunks/s (a fresh process)")
    ap.add_argument("--skip-process", action="store_true",
                    help="skip the whole-process rows (no-op index, search --batch)")
    ap.add_argument("--latency-ms", type=float, default=20.0,
                    help="per-request delay of the imitation remote server")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)
    sizes = [s for s in args.sizes.split(",") if s]
    print(f"{'what':<46} {'N':>7} {'now':>10} {'unit':<6} {'baseline':>10}  "
          f"{'baseline is':<34} {'ratio':>8}  {'goal':<8}")
    if not args.skip_process:
        compile_bytecode()
    with _server(args.port) as srv:
        workspaces = {s: build(s, srv.base_url) for s in sizes}
        for s in sizes:
            print(f"-- {s}")
            base = bench_search(s, workspaces[s], srv.base_url, args.queries)
            bench_noop(s, workspaces[s], srv.base_url)
            if args.sync_memory:
                bench_sync_memory(s, workspaces[s], srv.base_url)
            if args.build_memory:
                bench_build_memory(s, workspaces[s], srv.base_url)
            if not args.skip_process:
                bench_process_noop(s, workspaces[s], srv.base_url)
                bench_process_batch(s, workspaces[s], srv.base_url, args.queries, base)
            if s in args.index_sizes.split(","):
                bench_indexing(s, workspaces[s])
        for s in [x for x in args.vector_sizes.split(",") if x]:
            print(f"-- {s}, vector leg only")
            bench_vectors_only(s, build("100k", srv.base_url), srv.base_url, args.queries)
        print("-- independent of N")
        bench_mmr(20)
        if "10k" in workspaces:
            bench_pca(workspaces["10k"], srv.base_url)
    if not args.skip_concurrency:
        bench_concurrency(400, args.latency_ms)
    if not args.skip_cold:
        bench_cold()
    slopes()
    if args.json:
        Path(args.json).write_text(json.dumps(ROWS, indent=1, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
