"""A long-lived UMAP worker process: compile once, then project on request.

umap-learn's first fit compiles numba code for ~45 s on these machines, and every new process pays
it again. The workbench therefore starts this worker once (``python -m workbench.umap_worker``),
which warms up straight away, then reads jobs from stdin, one JSON object a line::

    {"in": "/cache/embedmap/x-input.npy", "out": "/cache/embedmap/x-umap-2d-n15.npy",
     "dims": 2, "n_neighbors": 15, "seed": 42}

and writes the coordinates to ``out`` (atomically), answering on stdout with
``{"event": "done", "out": ...}`` or ``{"event": "error", "out": ..., "error": ...}``. It prints
``{"event": "ready", "seconds": ...}`` once warm, and exits when stdin closes or its parent dies.
Running it in its own process keeps the compile from holding the Streamlit server's GIL.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from memory_core.base.fileio import atomic_write


def _say(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _watch_parent(parent: int) -> None:
    """Exit when the parent process goes away (its pid is no longer our parent's)."""
    while True:
        time.sleep(2.0)
        if os.getppid() != parent:
            os._exit(0)


def fit_umap(matrix: np.ndarray, dims: int = 2, n_neighbors: int = 15, seed: int = 42
             ) -> np.ndarray:
    """UMAP of ``matrix`` (rows are embeddings) to ``dims`` dimensions, cosine metric."""
    import umap  # slow import (~10 s): only here

    n = matrix.shape[0]
    nn = max(2, min(n_neighbors, n - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reducer = umap.UMAP(n_components=dims, n_neighbors=nn, metric="cosine",
                            random_state=seed, init="spectral" if n > dims + 2 else "random")
        return np.asarray(reducer.fit_transform(matrix), dtype=np.float32)


def warm() -> float:
    """Compile UMAP's numba code on a tiny random matrix; returns the seconds it took."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    fit_umap(rng.random((24, 8), dtype=np.float32), 2, 5)
    return time.perf_counter() - t0


def run_job(job: dict[str, Any]) -> None:
    """Fit one job and write its coordinates atomically to ``job["out"]``."""
    matrix = np.load(str(job["in"]))
    coords = fit_umap(matrix, int(job.get("dims", 2)), int(job.get("n_neighbors", 15)),
                      int(job.get("seed", 42)))
    buf = io.BytesIO()
    np.save(buf, coords)
    atomic_write(Path(str(job["out"])), buf.getvalue(), durable=False)  # a cache


def main() -> int:
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True).start()
    try:
        seconds = warm()
    except Exception as e:  # report and keep serving: each job will say what fails
        _say(event="warm-failed", error=f"{type(e).__name__}: {e}")
    else:
        _say(event="ready", seconds=round(seconds, 1))
    for line in sys.stdin:
        try:
            job = json.loads(line)
        except json.JSONDecodeError:
            continue
        try:
            run_job(job)
        except Exception as e:
            _say(event="error", out=job.get("out"), error=f"{type(e).__name__}: {e}")
        else:
            _say(event="done", out=job.get("out"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
