"""What the sidecars' block checksums cost (issue 19 item 7), next to the same work unchecked.

Synthetic sidecars at the benchmark index's scale (``--rows`` 133k chunks × 384 dims; postings
of ``--postings`` 20M (term, row) pairs over 200k terms), written by the real writers into a
temporary folder, then, each time on a fresh mapping (what a new process pays):

- writing: the CRC32 of every block, against the whole write;
- mapping: ``load`` (header and the per-row arrays checked) against bare ``np.memmap`` views;
- the first exact vector search (it checks the whole matrix) and the next ones, against the
  same top-k on an unchecked mapping;
- a no-op ``index``'s check of a fresh file: sealed (the mtime says nothing wrote it since),
  and unsealed (every block read, as after a write by someone else);
- the keyword postings of 8 terms asked for the first time (their blocks checked) and again.

    .venv/bin/python benchmarks/bench_sidecar.py [--rows 133000] [--postings 20000000]

The machine is shared and noisy: figures are this process's CPU time (``time.process_time``,
all threads: the checks of a whole matrix run on several), medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.base.topk import smallest_first
from memory_core.storage import postings, sidecar, vectors


def median_ms(fn: Callable[[], object], reps: int) -> float:
    """Median CPU milliseconds of this process (all its threads) per call of ``fn``."""
    ts = []
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        ts.append((time.process_time() - t0) * 1000)
    return statistics.median(ts)


def row(what: str, now: float, base: float, base_what: str) -> None:
    print(f"{what:<52} {now:9.2f} ms   {base_what:<40} {base:9.2f} ms   {now / base:6.2f}×",
          flush=True)


def bare_vectors(path: Path) -> np.ndarray:
    """The matrix mapped as the unchecked format was: header, memmap, a view."""
    with open(path, "rb") as f:
        header = sidecar.read_header(f, vectors.MAGIC)
    assert header is not None
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    n, d, o = int(header["rows"]), int(header["dims"]), header["offsets"]["matrix"]
    return buf[o : o + n * d * 4].view(np.float32).reshape(n, d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=133_000)
    ap.add_argument("--dims", type=int, default=384)
    ap.add_argument("--postings", type=int, default=20_000_000)
    ap.add_argument("--terms", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n, d = a.rows, a.dims
    with tempfile.TemporaryDirectory(prefix="bench-sidecar-") as tmp:
        db = Path(tmp) / "index.sqlite"
        mat = rng.standard_normal((n, d), dtype=np.float32)
        ids = [f"{i:064x}" for i in range(n)]
        rowids = np.arange(1, n + 1, dtype=np.int64)
        srcs = ["memory" if i % 3 else "sessions" for i in range(n)]
        print(f"vector sidecar: {n} × {d} ({n * d * 4 / 1e6:.0f} MB matrix)")
        t_write = median_ms(lambda: vectors.write(db, "s", rowids, ids, srcs, mat), 2)
        raw = np.ascontiguousarray(mat / np.linalg.norm(mat, axis=1, keepdims=True)).tobytes()
        row("  checksums computed by a write", median_ms(lambda: sidecar.block_crcs(raw), 3),
            t_write, "the whole write (normalise, write, fsync-free)")
        path = vectors.sidecar_path(db)
        row("  map: load() (header + rowids/ids/codes checked)",
            median_ms(lambda: vectors.load(db, "s"), a.repeat),
            median_ms(lambda: bare_vectors(path), a.repeat), "bare memmap views (unchecked)")
        q = rng.standard_normal(d).astype(np.float32)
        q /= np.linalg.norm(q)
        bare = bare_vectors(path)

        def bare_search() -> object:
            return smallest_first(-(bare @ q), 24)

        base = median_ms(bare_search, a.repeat)

        def first() -> object:
            vm = vectors.load(db, "s")
            assert vm is not None
            return vm.search(q, 24)

        def first_bare() -> object:
            m = bare_vectors(path)
            return smallest_first(-(m @ q), 24)

        row("  first exact search on a fresh mapping", median_ms(first, a.repeat),
            median_ms(first_bare, a.repeat), "the same, unchecked")
        vm = vectors.load(db, "s")
        assert vm is not None
        vm.search(q, 24)
        row("  next searches (blocks already checked)",
            median_ms(lambda: vm.search(q, 24), a.repeat), base, "top-24 on an unchecked mapping")

        def sealed() -> object:
            v = vectors.load(db, "s")
            assert v is not None and v.intact()
            return v

        def unsealed() -> object:
            os.utime(path)  # as if something wrote it: every block is read
            return sealed()

        row("  no-op index check, file sealed", median_ms(sealed, a.repeat),
            median_ms(lambda: vectors.load(db, "s"), a.repeat), "load() alone")
        row("  no-op index check, file unsealed (read whole)", median_ms(unsealed, a.repeat),
            base, "top-24 on an unchecked mapping")

        n_p, n_t = a.postings, a.terms
        print(f"keyword postings: {n_p} postings over {n_t} terms, {n} rows")
        counts = rng.multinomial(n_p, rng.dirichlet(np.full(n_t, 0.3)))
        ptr = np.concatenate([[0], np.cumsum(counts)])
        rows = np.concatenate([np.sort(rng.choice(n, c, replace=c > n)) if c else
                               np.zeros(0, np.int64) for c in counts]).astype(np.int32)
        tfs = rng.integers(1, 5, n_p).astype(np.uint16)
        terms = [f"t{i:07d}" for i in range(n_t)]
        doclen = np.bincount(rows, weights=tfs, minlength=n).astype(np.int32)
        t0 = time.perf_counter()
        postings.write(db, "s", "unicode61", terms, ptr, rows, tfs, rowids,
                       [i.encode() for i in ids], srcs, doclen)
        t_write = (time.perf_counter() - t0) * 1000
        del rows, tfs
        ppath = postings.sidecar_path(db)
        print(f"  file: {ppath.stat().st_size / 1e6:.0f} MB, written in {t_write:.0f} ms")
        asked = [terms[i] for i in rng.choice(n_t, 8, replace=False)]

        def bare_post() -> object:
            with open(ppath, "rb") as f:
                header = sidecar.read_header(f, postings.MAGIC)
            assert header is not None
            return np.memmap(ppath, dtype=np.uint8, mode="r")

        row("  map: load() (all but rows/tfs checked)",
            median_ms(lambda: postings.load(db, "s"), a.repeat),
            median_ms(bare_post, a.repeat), "bare memmap (unchecked)")

        p = postings.load(db, "s")
        assert p is not None
        fresh = iter(rng.permutation(n_t).tolist())

        def first_terms() -> object:  # 8 terms never asked on this mapping
            return [p.term_rows(terms[next(fresh)]) for _ in range(8)]

        row("  8 terms asked first (their blocks checked)", median_ms(first_terms, a.repeat),
            median_ms(lambda: [p.term_rows(t) for t in asked], a.repeat),
            "8 terms asked again")
        load_ms = median_ms(lambda: postings.load(db, "s"), a.repeat)

        def post_unsealed() -> object:
            os.utime(ppath)
            q2 = postings.load(db, "s")
            assert q2 is not None and q2.intact()
            return q2

        row("  no-op index check, file unsealed (read whole)",
            median_ms(post_unsealed, a.repeat), load_ms, "load() alone")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
