"""Whole-chunk embedding: a text longer than the model reads becomes windows it can read, pooled.

A model reads a bounded input and silently drops the rest: all-MiniLM-L6-v2 reads 256 word
pieces ([CLS] and [SEP] included), so a 400-token chunk lost about a third of its text, and most
of the demo's chunks were cut. A provider that declares an :class:`InputLimit` (its
``input_limit`` attribute; any provider may) has every longer text split at word boundaries
(CJK: anywhere) into windows that fit, embedded like any other text, and pooled into one vector:
the mean of the window vectors, re-normalised (:data:`POOLING`).

Only the default profile's indexes (bounded chunking) embed this way: the reference profile
reproduces OpenClaw, whose model truncates. Pooled vectors are cached under
:func:`pooled_key` (the provider's key with :data:`POOLING`), never under the provider's own
key, so a truncated vector cached for the same text is never read back as a whole-chunk one.

Token counts come from the provider's own ``token_counts`` when it has one (the real tokenizer),
otherwise from the reference's estimate (4 weighted characters a token, CJK weighing 4), which
suits a remote model whose tokenizer is not at hand.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..base.text import CHARS_PER_TOKEN, estimate_chars, is_word_start
from .base import ProgressFn, normalize_rows, provider_key_for

if TYPE_CHECKING:
    import numpy as np
else:
    from ..base.lazy import numpy as np

#: The pooling every windowing provider names in its ``provider_key``: windows of at most the
#: declared limit, cut at word boundaries into near-equal parts, vectors averaged.
POOLING = "mean-windows-v1"

TokenCounter = Callable[[Sequence[str]], list[int]]


@dataclass(frozen=True)
class InputLimit:
    """What one input of a model may hold: ``tokens`` as the model counts them, its special
    tokens and any prefix the provider adds included; ``chars`` a character cap the provider
    applies on top (e5 cuts at 1,200 characters to keep its batches short)."""

    tokens: int
    chars: int | None = None


def pooled_key(provider_key: str) -> str:
    """The cache key of a provider's pooled vectors (its own key names truncated ones)."""
    return provider_key_for({"providerKey": provider_key, "pooling": POOLING})


def declared_limit(provider: object) -> InputLimit | None:
    """The provider's :class:`InputLimit`, or ``None`` when it declares none."""
    limit = getattr(provider, "input_limit", None)
    return limit if isinstance(limit, InputLimit) else None


def estimated_counts(texts: Sequence[str]) -> list[int]:
    """Tokens per text by the reference's estimate, plus two for a model's special tokens."""
    return [-(-estimate_chars(t) // CHARS_PER_TOKEN) + 2 for t in texts]


def counter_of(provider: object) -> TokenCounter:
    """The provider's own ``token_counts``, or :func:`estimated_counts`."""
    counter = getattr(provider, "token_counts", None)
    return counter if callable(counter) else estimated_counts


def _cut_near(text: str, target: int, lo: int, hi: int) -> int:
    """A word start nearest ``target`` within ``(lo, hi)``, else ``target`` itself (a run with
    no boundary, e.g. a long URL, is cut hard)."""
    for d in range(0, max(target - lo, hi - target)):
        for j in (target - d, target + d):
            if lo < j < hi and is_word_start(text, j):
                return j
    return target


def _split(text: str, parts: int) -> list[str]:
    """``text`` in ``parts`` pieces of near-equal length, each cut at a word start."""
    cuts = [0]
    for k in range(1, parts):
        target = len(text) * k // parts
        cuts.append(_cut_near(text, target, cuts[-1], len(text)))
    cuts.append(len(text))
    return [text[a:b] for a, b in itertools.pairwise(cuts) if b > a]


def windows_of(texts: Sequence[str], limit: InputLimit, count: TokenCounter) -> list[list[str]]:
    """Each text as the windows it is embedded in (one window when it fits whole)."""
    counts = count(texts) if texts else []
    return [_fit(text, n, limit, count) for text, n in zip(texts, counts, strict=True)]


def _fit(text: str, n: int, limit: InputLimit, count: TokenCounter) -> list[str]:
    too_long = limit.chars is not None and len(text) > limit.chars
    if (n <= limit.tokens and not too_long) or len(text) < 2:
        return [text]
    # Aim a little under the limit: word boundaries move the cuts, and tokens are not uniform.
    parts = max(2, -(-n // max(1, int(limit.tokens * 0.9))))
    if limit.chars:
        parts = max(parts, -(-len(text) // max(1, int(limit.chars * 0.95))))
    pieces = _split(text, parts)
    out: list[str] = []
    for piece, m in zip(pieces, count(pieces), strict=True):
        out.extend(_fit(piece, m, limit, count) if piece != text else [piece])
    return out


def pool(vectors: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """One row per text: the mean of its ``sizes[i]`` consecutive window rows, re-normalised."""
    rows = []
    at = 0
    for k in sizes:
        rows.append(vectors[at : at + k].mean(axis=0) if k > 1 else vectors[at])
        at += k
    if not rows:
        return np.zeros((0, vectors.shape[1] if vectors.ndim == 2 else 0), dtype=np.float32)
    return normalize_rows(np.vstack(rows))


def embed_whole(provider: object, texts: Sequence[str], progress: ProgressFn | None = None
                ) -> np.ndarray:
    """``provider.embed_documents(texts)``, but every text read whole: windowed and pooled when
    the provider declares an :class:`InputLimit` (progress is reported in texts)."""
    embed = provider.embed_documents  # type: ignore[attr-defined]
    limit = declared_limit(provider)
    if limit is None or not texts:
        return np.asarray(embed(texts, progress))
    wins = windows_of(texts, limit, counter_of(provider))
    flat = [w for ws in wins for w in ws]
    if len(flat) == len(texts):
        return np.asarray(embed(flat, progress))
    total = len(texts)

    def scaled(done: int, _n: int) -> None:
        if progress is not None:
            progress(done * total // len(flat), total)

    return pool(np.asarray(embed(flat, scaled)), [len(ws) for ws in wins])


def windowed_share(provider: object, texts: Sequence[str]) -> tuple[int, int]:
    """(texts needing more than one window, windows that still exceed the limit): the second
    is 0 unless a single unbreakable run is longer than the model reads."""
    limit = declared_limit(provider)
    if limit is None:
        return 0, 0
    count = counter_of(provider)
    wins = windows_of(texts, limit, count)
    flat = [w for ws in wins for w in ws]
    over = sum(1 for n in (count(flat) if flat else []) if n > limit.tokens)
    return sum(1 for ws in wins if len(ws) > 1), over
