"""The fast PCA gives the same map as a full SVD (up to each axis's sign)."""

from __future__ import annotations

import numpy as np

from workbench.pca import principal_axes, randomized_components
from workbench.projection import fit_pca


def _svd_axes(x: np.ndarray, k: int) -> np.ndarray:
    return np.linalg.svd(x - x.mean(axis=0), full_matrices=False)[2][:k]


def _same_up_to_sign(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    return all(min(np.abs(r - s).max(), np.abs(r + s).max()) < tol for r, s in zip(a, b,
                                                                                  strict=True))


def _data(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # a few strong directions plus noise, like embeddings with topics
    basis = rng.standard_normal((6, d))
    x = rng.standard_normal((n, 6)) * np.array([9, 6, 4, 2, 1, 0.5]) @ basis
    return x + 0.1 * rng.standard_normal((n, d))


def test_covariance_axes_equal_svd_axes() -> None:
    x = _data(3000, 384)
    got = principal_axes(x - x.mean(axis=0), 3)
    assert _same_up_to_sign(got, _svd_axes(x, 3), 1e-6)


def test_randomized_axes_equal_svd_axes() -> None:
    x = _data(1500, 1536, seed=1)
    got = randomized_components(x - x.mean(axis=0), 2)
    assert _same_up_to_sign(got, _svd_axes(x, 2), 1e-4)


def test_fit_pca_signs_are_stable_and_coordinates_match() -> None:
    x = _data(2000, 64, seed=2).astype(np.float32)
    coords, _ = fit_pca(x, 2)
    again, _ = fit_pca(x.copy(), 2)
    assert np.array_equal(coords, again)
    ref = (x - x.mean(axis=0)) @ _svd_axes(x.astype(np.float64), 2).T
    for j in range(2):
        assert min(np.abs(coords[:, j] - ref[:, j]).max(),
                   np.abs(coords[:, j] + ref[:, j]).max()) < 1e-3


def test_degenerate_inputs() -> None:
    coords, _ = fit_pca(np.zeros((1, 8), dtype=np.float32), 2)
    assert coords.shape == (1, 2)
    coords, model = fit_pca(np.eye(2, 8, dtype=np.float32), 3)
    assert coords.shape == (2, 3) and model.components.shape == (3, 8)
