"""Set similarity."""

from __future__ import annotations

from collections.abc import Set


def jaccard(a: Set[str], b: Set[str]) -> float:
    """|a ∩ b| / |a ∪ b|. Two empty sets are identical (1.0), as in the reference's MMR.

    Callers for whom "no tokens" must never count as a match (the duplicate check of promotion)
    test for emptiness before calling.
    """
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    inter = len(a & b) if len(a) < len(b) else len(b & a)
    return inter / (len(a) + len(b) - inter)
