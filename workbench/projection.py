"""2-D / 3-D maps of chunk embeddings: PCA now, UMAP from a warm background worker, cached.

Coordinates are cached on disk per *index fingerprint* (the chunk ids, which hash content and
model, plus the projection's parameters), so reopening a workspace shows its map at once. PCA is
computed in-process (milliseconds). UMAP runs in :mod:`workbench.umap_worker`, a separate process
started once per server that compiles numba on start (~45 s the first time), so the page can
show PCA with a progress bar meanwhile and never blocks.

A query is placed on the map with the same projection for PCA, and for UMAP at the
similarity-weighted mean of its nearest chunks (what ``UMAP.transform`` approximates, without
keeping a fitted model around).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_core.base.dates import path_date
from memory_core.base.fileio import atomic_write
from memory_core.base.locations import REPO_ROOT as ROOT
from memory_core.base.locations import cache_root

from .pca import principal_axes

#: What the first UMAP compile takes on these machines (for the progress bar).
EXPECTED_WARM_S = 50.0


def map_dir() -> Path:
    d = cache_root() / "embedmap"
    d.mkdir(parents=True, exist_ok=True)
    return d


def fingerprint(ids: list[str], dims: int) -> str:
    """Identifies an index's embeddings: the chunk ids (content + model hashes) and width."""
    h = hashlib.sha256(f"{dims}\n".encode())
    for cid in ids:
        h.update(cid.encode())
        h.update(b"\n")
    return h.hexdigest()[:24]


# --------------------------------------------------------------------------- PCA


@dataclass
class PcaModel:
    """A fitted PCA: ``coords = (x - mean) @ components.T``."""

    mean: np.ndarray
    components: np.ndarray

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.atleast_2d(x) - self.mean) @ self.components.T


def fit_pca(matrix: np.ndarray, dims: int = 2) -> tuple[np.ndarray, PcaModel]:
    """PCA (top axes, :mod:`workbench.pca`); returns the coordinates and the model."""
    x = np.asarray(matrix, dtype=np.float64)
    mean = x.mean(axis=0)
    centred = x - mean
    if x.shape[0] < 2:
        comps = np.eye(dims, x.shape[1])
    else:
        # the top axes only (covariance eigenvectors, or a randomised SVD for wide matrices):
        # a full SVD took ~5 s at 10k points
        comps = principal_axes(centred, dims)
        if comps.shape[0] < dims:  # fewer samples than dims: pad with zero axes
            comps = np.vstack([comps, np.zeros((dims - comps.shape[0], x.shape[1]))])
    model = PcaModel(mean, comps)
    return model.transform(x).astype(np.float32), model


def pca_cached(matrix: np.ndarray, fp: str, dims: int) -> tuple[np.ndarray, PcaModel]:
    """PCA coordinates from the disk cache, or computed and saved."""
    path = map_dir() / f"{fp}-pca-{dims}d.npz"
    if path.is_file():
        with contextlib.suppress(OSError, ValueError, KeyError):
            z = np.load(path)
            return z["coords"], PcaModel(z["mean"], z["components"])
    coords, model = fit_pca(matrix, dims)
    buf = io.BytesIO()
    np.savez(buf, coords=coords, mean=model.mean, components=model.components)
    atomic_write(path, buf.getvalue(), durable=False)  # a cache: losing it costs a refit
    return coords, model


# --------------------------------------------------------------------------- placing a query


def place_query(qvec: np.ndarray, matrix: np.ndarray, coords: np.ndarray, k: int = 5
                ) -> np.ndarray:
    """The similarity-weighted mean of the coordinates of the ``k`` chunks nearest ``qvec``."""
    sims = matrix @ np.asarray(qvec, dtype=np.float32)
    k = max(1, min(k, len(sims)))
    top = np.argsort(-sims)[:k]
    w = np.clip(sims[top], 1e-6, None)
    return (coords[top] * w[:, None]).sum(axis=0) / w.sum()


# --------------------------------------------------------------------------- UMAP worker


def umap_path(fp: str, dims: int, n_neighbors: int) -> Path:
    return map_dir() / f"{fp}-umap-{dims}d-n{n_neighbors}.npy"


class UmapWorker:
    """The server's one UMAP worker process (see :mod:`workbench.umap_worker`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.proc: subprocess.Popen[str] | None = None
        self.started_at: float | None = None
        self.ready_after: float | None = None
        self.warm_error: str | None = None
        self.errors: dict[str, str] = {}
        self.submitted: dict[str, float] = {}

    def start(self) -> None:
        """Start the worker (it warms up at once) unless it is running."""
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
            env.setdefault("NUMBA_CACHE_DIR", str(cache_root() / "numba"))
            with open(map_dir() / "umap-worker.log", "a", encoding="utf-8") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "workbench.umap_worker"], cwd=str(ROOT), env=env,
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                    bufsize=1)
            self.started_at = time.monotonic()
            self.ready_after = None
            self.warm_error = None
            self.submitted.clear()
            threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if ev.get("event") == "ready":
                self.ready_after = float(ev.get("seconds", 0.0))
            elif ev.get("event") == "warm-failed":
                self.warm_error = str(ev.get("error"))
            elif ev.get("event") == "error":
                self.errors[str(ev.get("out"))] = str(ev.get("error"))

    def state(self) -> str:
        """``cold`` (not started), ``warming``, ``ready``, ``failed`` or ``dead``."""
        if self.proc is None:
            return "cold"
        if self.warm_error:
            return "failed"
        if self.proc.poll() is not None:
            return "dead"
        return "ready" if self.ready_after is not None else "warming"

    def elapsed(self) -> float:
        return 0.0 if self.started_at is None else time.monotonic() - self.started_at

    def submit(self, matrix: np.ndarray, out: Path, dims: int, n_neighbors: int,
               seed: int = 42) -> None:
        """Queue a fit (once per output file); the worker writes ``out`` when done."""
        self.start()
        key = str(out)
        with self._lock:
            if key in self.submitted:
                return
            inp = out.with_name(out.name.replace(".npy", "-input.npy"))
            np.save(inp, np.asarray(matrix, dtype=np.float32))
            job = {"in": str(inp), "out": key, "dims": dims, "n_neighbors": n_neighbors,
                   "seed": seed}
            assert self.proc is not None and self.proc.stdin is not None
            try:
                self.proc.stdin.write(json.dumps(job) + "\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                self.errors[key] = f"worker unavailable: {e}"
                return
            self.submitted[key] = time.monotonic()

    def stop(self) -> None:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
            self.proc = None


#: The process-wide UMAP worker.
WORKER = UmapWorker()
atexit.register(WORKER.stop)


def warm_up() -> None:
    """Start compiling UMAP in the background unless disabled (``MEMORY_WORKBENCH_NO_UMAP``)."""
    if not os.environ.get("MEMORY_WORKBENCH_NO_UMAP"):
        WORKER.start()


@dataclass
class UmapStatus:
    """Where a UMAP projection stands: ``coords`` when done, else why not and how far."""

    coords: np.ndarray | None
    state: str  # "done", "warming", "fitting", "failed", "disabled"
    elapsed: float = 0.0
    expected: float = EXPECTED_WARM_S
    error: str | None = None


def umap_coords(matrix: np.ndarray, fp: str, dims: int, n_neighbors: int) -> UmapStatus:
    """UMAP coordinates from the disk cache, or a queued job's status (never blocks)."""
    out = umap_path(fp, dims, n_neighbors)
    if out.is_file():
        with contextlib.suppress(OSError, ValueError):
            coords = np.load(out)
            if coords.shape == (matrix.shape[0], dims):
                return UmapStatus(coords, "done")
    if os.environ.get("MEMORY_WORKBENCH_NO_UMAP"):
        return UmapStatus(None, "disabled", error="UMAP is disabled "
                          "(MEMORY_WORKBENCH_NO_UMAP is set)")
    w = WORKER
    err = w.errors.get(str(out)) or w.warm_error
    if err:
        return UmapStatus(None, "failed", error=err)
    w.submit(matrix, out, dims, n_neighbors)
    if w.state() == "dead":
        return UmapStatus(None, "failed", error="the UMAP worker exited; see "
                          f"{map_dir() / 'umap-worker.log'}")
    if w.state() == "warming":
        return UmapStatus(None, "warming", w.elapsed(), EXPECTED_WARM_S)
    since = time.monotonic() - w.submitted.get(str(out), time.monotonic())
    return UmapStatus(None, "fitting", since, max(3.0, matrix.shape[0] / 60))


# --------------------------------------------------------------------------- colouring


def chunk_date(path: str) -> str:
    """The date a chunk belongs to: the date its file name starts with (a diary, a dated
    transcript), else "undated". A file's mtime is not its date: a clone or a copy sets every
    mtime to the day of the copy, which made MEMORY.md and the notes look like today's diary."""
    d = path_date(path)
    return d.isoformat() if d is not None else "undated"


def kmeans_labels(matrix: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Cluster labels of the (unit-length) embeddings, k-means with ``k`` clusters."""
    from sklearn.cluster import KMeans

    k = max(1, min(k, matrix.shape[0]))
    return KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(matrix)
