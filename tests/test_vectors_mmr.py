"""The vectorised MMR orders exactly as the pair-by-pair greedy loop it replaced.

``_loop_order`` below is the previous ``fusion.mmr_rerank`` (and its tokeniser), kept verbatim
as the oracle; random inputs include ties in score, duplicate snippets, empty snippets and
Chinese/Japanese/Korean text.
"""

from __future__ import annotations

import itertools
import math
import random
import re

import pytest

from memory_core.base.sets import jaccard
from memory_core.base.text import REFERENCE_MMR_CJK_RE
from memory_core.read.fusion import Hit, mmr_rerank
from memory_core.read.rerank import mmr_order, mmr_tokens

_WORD = re.compile(r"[a-z0-9_]+")


def _loop_tokens(text: str) -> set[str]:
    low = text.lower()
    out = set(_WORD.findall(low))
    chars = [(i, c) for i, c in enumerate(low) if REFERENCE_MMR_CJK_RE.match(c)]
    out.update(c for _, c in chars)
    for (i, a), (j, b) in itertools.pairwise(chars):
        if j == i + 1:
            out.add(a + b)
    return out


def _loop_order(texts: list[str], scores: list[float], lam: float) -> list[int]:
    lam = min(1.0, max(0.0, lam))
    if lam >= 1.0 or len(texts) < 2:
        return list(range(len(texts)))
    lo, hi = min(scores), max(scores)
    rel = [1.0 if hi == lo else (s - lo) / (hi - lo) for s in scores]
    toks = [_loop_tokens(t) for t in texts]
    remaining = list(range(len(texts)))
    chosen: list[int] = []
    max_sim = [0.0] * len(texts)
    while remaining:
        best, best_val = None, -math.inf
        for i in remaining:
            val = lam * rel[i] - (1 - lam) * max_sim[i]
            if best is None or val > best_val or (val == best_val and scores[i] > scores[best]):
                best, best_val = i, val
        assert best is not None
        chosen.append(best)
        remaining.remove(best)
        for i in remaining:
            sim = jaccard(toks[i], toks[best])
            if sim > max_sim[i]:
                max_sim[i] = sim
    return chosen


_WORDS = ("postgres backup vlan router deploy cron 连接池 日志 熔断 データ 백업 a_b x9 "
          "retry proxy cache 报表 時区").split()


def _random_case(rng: random.Random, n: int) -> tuple[list[str], list[float]]:
    texts: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            texts.append("")
        elif r < 0.15 and texts:
            texts.append(rng.choice(texts))  # exact duplicate snippet
        else:
            k = rng.randint(1, 12)
            sep = "" if rng.random() < 0.2 else " "
            texts.append(sep.join(rng.choice(_WORDS) for _ in range(k)))
    # coarse scores create ties on purpose
    scores = [round(rng.random(), 1 if rng.random() < 0.5 else 6) for _ in range(n)]
    return texts, scores


@pytest.mark.parametrize("seed", range(40))
def test_vectorised_mmr_matches_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    texts, scores = _random_case(rng, rng.randint(0, 60))
    lam = rng.choice([0.0, 0.3, 0.5, 0.7, 0.9, 1.0, 1.5, -0.2])
    assert mmr_order(texts, scores, lam) == _loop_order(texts, scores, lam)


def test_tokens_match_the_reference_tokeniser() -> None:
    for text in ["", "Router VLAN-20 a_b", "连接池耗尽 日志", "ab连接x池", "データ백업データ",
                 "MiXeD 中文English混合"]:
        assert mmr_tokens(text) == _loop_tokens(text)


def test_fusion_mmr_rerank_uses_the_same_order() -> None:
    rng = random.Random(99)
    texts, scores = _random_case(rng, 80)
    hits = [Hit(f"c{i}", f"memory/{i}.md", "memory", 1, 2, s, t)
            for i, (t, s) in enumerate(zip(texts, scores, strict=True))]
    got = [h.id for h in mmr_rerank(hits, 0.7)]
    assert got == [f"c{i}" for i in _loop_order(texts, scores, 0.7)]
