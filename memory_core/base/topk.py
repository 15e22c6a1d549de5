"""Top-k selection that agrees with a stable sort, ties included."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
else:
    from .lazy import numpy as np


def smallest_first(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` smallest ``values``, smallest first, ties by index: a stable full
    sort's first ``k``, without sorting everything.

    Every value equal to the ``k``-th smallest is kept through the partition: ``argpartition``
    alone keeps an arbitrary subset of a tie at the cut (duplicate chunks score alike), so the
    rows listed could differ from the ones SQL's ``ORDER BY … LIMIT k`` or a sort would give.
    """
    n = int(values.shape[0])
    if k <= 0 or n == 0:
        return np.zeros(0, np.int64)
    if k < n:
        kth = values[np.argpartition(values, k - 1)[k - 1]]
        top = np.flatnonzero(values <= kth)
    else:
        top = np.arange(n)
    return top[np.lexsort((top, values[top]))][:k]
