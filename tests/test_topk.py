"""``common.topk.smallest_first``: a stable sort's first k, ties at the cut included.

``argpartition`` alone keeps an arbitrary member of a tie at the k-th place, so a search could
list a different duplicate chunk than SQL's ``ORDER BY … LIMIT k`` (or a full stable sort).
"""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.base.topk import smallest_first


@pytest.mark.parametrize("seed", range(30))
def test_equals_a_stable_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    values = rng.integers(0, max(2, n // 8), n).astype(np.float64)  # many ties
    for k in (1, 2, 5, n // 2, n - 1, n, n + 3):
        want = np.argsort(values, kind="stable")[: max(0, k)]
        assert smallest_first(values, k).tolist() == want.tolist()


def test_a_tie_at_the_cut_keeps_the_first_indices() -> None:
    values = np.array([3.0, 1.0, 2.0, 2.0, 2.0, 0.5])
    assert smallest_first(values, 3).tolist() == [5, 1, 2]
    assert smallest_first(values, 0).tolist() == []
    assert smallest_first(np.zeros(0), 4).tolist() == []
