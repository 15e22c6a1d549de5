"""Principal axes of an embedding matrix, fast: covariance eigenvectors or a randomised SVD.

A full ``np.linalg.svd`` of a 10k × 384 matrix computes 384 left singular vectors of 10k rows
that a 2-D map never uses (seconds on a busy two-core machine). The map needs the top 2 or 3
right singular vectors only:

* for widths up to :data:`EIGH_MAX_DIMS` they are the top eigenvectors of the d × d covariance
  ``XᵀX`` (one matrix product and a small symmetric eigensolve: exact, deterministic, ~0.1 s);
* wider matrices use a randomised SVD (Halko, Martinsson & Tropp 2011: a Gaussian sketch, a few
  power iterations, an SVD of the small projected matrix), seeded, so the same input gives the
  same axes.

Signs are fixed so that each axis's largest loading is positive (the map does not mirror
between the two methods, nor between runs).

BLAS runs on one thread here: the products are ~0.1 s of work, and on a loaded machine
OpenBLAS's worker threads spin waiting for cores (measured on the shared two-core machine at
load 8: 10k × 384 took 230–320 ms of CPU and up to 630 ms wall with its threads, 73 ms CPU and
110–150 ms wall with one).
"""

from __future__ import annotations

import numpy as np

EIGH_MAX_DIMS = 1024


def _flip(components: np.ndarray) -> np.ndarray:
    idx = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), idx])
    signs[signs == 0] = 1.0
    return components * signs[:, None]


def randomized_components(centred: np.ndarray, k: int, *, oversample: int = 10,
                          n_iter: int = 4, seed: int = 0) -> np.ndarray:
    """Top ``k`` right singular vectors of ``centred`` by randomised SVD (rows = axes)."""
    n, d = centred.shape
    rng = np.random.default_rng(seed)
    width = min(d, n, k + oversample)
    y = centred @ rng.standard_normal((d, width))
    for _ in range(n_iter):  # power iterations sharpen the spectrum; QR keeps them stable
        q, _ = np.linalg.qr(y)
        z, _ = np.linalg.qr(centred.T @ q)
        y = centred @ z
    q, _ = np.linalg.qr(y)
    _, _, vt = np.linalg.svd(q.T @ centred, full_matrices=False)
    return vt[:k]


def principal_axes(centred: np.ndarray, k: int) -> np.ndarray:
    """The top ``k`` principal axes (``k × d``) of an already centred matrix, signs fixed."""
    from threadpoolctl import threadpool_limits  # imported here: only the map needs it

    n, d = centred.shape
    k = min(k, d, n)
    if k <= 0:
        return np.zeros((0, d))
    with threadpool_limits(limits=1, user_api="blas"):
        if d <= EIGH_MAX_DIMS:
            _, vecs = np.linalg.eigh(centred.T @ centred)  # ascending
            comps = vecs[:, ::-1][:, :k].T
        else:
            comps = randomized_components(centred, k)
    return _flip(np.asarray(comps, dtype=np.float64))
