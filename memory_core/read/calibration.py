"""Calibrated scores: a fused hit's evidence → the probability that it is relevant.

The ``normalized`` fusion puts each leg on a relative scale (BM25 over the query's best, the
cosine from a floor), so its top hit scores high whatever it is, and a gate on it cannot say
"nothing here". The default profile keeps that fusion's order and replaces each hit's score by
an estimate of P(it covers what was asked), read from the hit's place in the list and from the
query's **absolute** evidence:

* ``fused`` / ``inv_rank``: the hit's normalized-fusion score and 1 / its rank there;
* ``top_fused``: the best fused score of the query;
* ``top_cos``: the best raw cosine of the vector pool (MiniLM: an unrelated question's best
  is near 0.3, a question the memory answers near 0.5);
* ``top_kw``: the best bm25 over the query's own best *possible* bm25 on this index (every
  phrase of its OR query matched, saturated: :func:`query_bound`), so matching one common word
  of a five-word question is weak evidence on any corpus;
* ``known``: the share of the query's terms the index holds at all (nonsense: none);
* ``top_both``: whether both legs found the top hit (the legs agree).

A logistic model on these, then an increasing (isotonic) correction of its output, fitted on
the dev data's folds by ``scripts/fit_calibration.py`` (constants in the package data file
``calibration_fitted.json``, read once by :func:`load_fitted`: :data:`CALIBRATIONS`,
:data:`GATES`). The hit-level features enter with positive weights, so
the probability falls along the fused order and the order is the fusion's. ``minScore 0.5``
then means "at least even odds", and ``abstain_below`` returns nothing when even the best hit
is unlikely to be relevant. Pure: numbers in, numbers out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.fitted import FITTED_FILE, read_fitted
from ..storage.fts import phrase_bound
from .query import DATE_WORD, tokens

if TYPE_CHECKING:  # the config reads the fitted gates at import; candidates come with a search
    from .candidates import Candidates

#: The features, in the order of a fitted model's weights.
FEATURES: tuple[str, ...] = ("fused", "inv_rank", "top_cos", "top_kw", "known", "top_both",
                             "top_fused")


@dataclass(frozen=True)
class Calibration:
    """A fitted map from :data:`FEATURES` to a probability: ``iso(sigmoid(b + w·(x-μ)/σ))``.

    ``iso_x`` / ``iso_y``: an increasing piecewise-linear correction of the logistic output (its
    knots; empty = none). ``note``: what it was fitted on, by which command.
    """

    name: str
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float
    iso_x: tuple[float, ...] = ()
    iso_y: tuple[float, ...] = ()
    note: str = ""

    def terms(self, x: Mapping[str, float]) -> dict[str, float]:
        """Each feature's additive part of the logit (what ``--explain`` shows)."""
        return {f: w * (float(x.get(f, 0.0)) - m) / s for f, w, m, s in
                zip(self.features, self.weights, self.mean, self.scale, strict=True)}

    def evaluate(self, x: Mapping[str, float], q: QueryEvidence | None = None
                 ) -> tuple[dict[str, float], float, float, float]:
        """Each feature's part of the logit, the logit, the logistic output and the
        probability: its isotonic correction, times the query's :meth:`QueryEvidence.factor`
        (words the index never held). The one place the arithmetic is done: fusion's scores
        and their explanation read it."""
        terms = self.terms(x)
        z = self.intercept + sum(terms.values())
        raw = sigmoid(z)
        return terms, z, raw, self.correct(raw) * (q.factor() if q is not None else 1.0)

    def probability(self, x: Mapping[str, float], q: QueryEvidence | None = None) -> float:
        """The calibrated probability of one hit (:meth:`evaluate`)."""
        return self.evaluate(x, q)[3]

    def correct(self, p: float) -> float:
        """The isotonic correction of a logistic output (identity without knots)."""
        if not self.iso_x:
            return p
        return interp(p, self.iso_x, self.iso_y)


#: The fitted models and their abstention gates, as ``scripts/fit_calibration.py --write``
#: saves them (data, not code: the script writes the file, nobody edits it by hand).


def load_fitted(path: Path = FITTED_FILE) -> tuple[dict[str, Calibration], dict[str, float]]:
    """The fitted calibrations by name, and each one's gate (the default profile's
    ``abstain_below``, chosen with the model)."""
    data = read_fitted(path)
    models = {}
    for name, d in data["calibrations"].items():
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                  for k, v in d.items()}
        models[name] = Calibration(**fields)
    return models, {k: float(v) for k, v in data["gates"].items()}


def save_fitted(models: Mapping[str, Calibration], gates: Mapping[str, float],
                path: Path = FITTED_FILE) -> None:
    """Write what :func:`load_fitted` reads (floats as Python writes them: exact)."""
    data: dict[str, Any] = {"gates": dict(gates),
                            "calibrations": {k: asdict(m) for k, m in models.items()}}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


CALIBRATIONS, GATES = load_fitted()


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Piecewise-linear through ``(xs, ys)`` (increasing ``xs``), flat outside them."""
    if x <= xs[0]:
        return ys[0]
    if x >= xs[-1]:
        return ys[-1]
    lo, hi = 0, len(xs) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if xs[mid] <= x:
            lo = mid
        else:
            hi = mid
    span = xs[hi] - xs[lo]
    t = (x - xs[lo]) / span if span > 0 else 0.0
    return ys[lo] + t * (ys[hi] - ys[lo])


def query_bound(cands: Candidates) -> float:
    """The query's best possible bm25 on this index: every phrase matched at saturation. A
    phrase the index lacks counts as if one row held it (what it would add had it matched), so
    words the memory has never seen lower the share a hit can reach."""
    n = cands.keyword_rows
    return sum(phrase_bound(n, max(1, d)) for d in cands.keyword_df) if n > 0 else 0.0


@dataclass(frozen=True)
class QueryEvidence:
    """What is the same for every hit of one query: the legs' best absolute evidence."""

    top_cos: float
    top_kw: float
    known: float
    #: the query's names the index holds nowhere (:func:`unseen_terms`)
    unseen: tuple[str, ...] = ()
    #: its other words the index holds nowhere (:func:`unseen_terms`)
    absent: tuple[str, ...] = ()

    def factor(self) -> float:
        """What every calibrated probability of the query is multiplied by: a name the
        memory never held, :data:`UNSEEN_NAME_FACTOR`; else another word it never held,
        :data:`UNSEEN_WORD_FACTOR`; else 1."""
        if self.unseen:
            return UNSEEN_NAME_FACTOR
        return UNSEEN_WORD_FACTOR if self.absent and self.known >= ABSENT_KNOWN_MIN else 1.0

    def describe(self) -> str:
        """One line for an explanation: why the query's evidence is weak or strong."""
        return (f"best cosine {self.top_cos:.2f}, best keyword match {self.top_kw:.0%} of the "
                f"query's best possible bm25, {self.known:.0%} of its terms in the index"
                + (f"; never seen: {', '.join(self.unseen)}" if self.unseen else "")
                + (f"; words never seen: {', '.join(self.absent)}" if self.factor() < 1
                   and not self.unseen else ""))


def query_evidence(cands: Candidates) -> QueryEvidence:
    """The query-level evidence of ``cands`` (its whole fetched pools)."""
    bound = query_bound(cands)
    best = max((-k.raw for k in cands.keyword), default=0.0)
    # the chunks' own cosines (``raw``), which the model was fitted on, not a best block's
    top_cos = max((v.raw for v in cands.vector), default=0.0)
    known = (sum(1 for d in cands.keyword_df if d > 0) / len(cands.keyword_df)
             if cands.keyword_df else 0.0)
    top_kw = min(1.0, best / bound) if bound > 0 else 0.0
    return QueryEvidence(top_cos, top_kw, known, *unseen_terms(cands))


#: Issue #36: a question that names something the memory has never seen ("my apartment in
#: Shinjuku" where only Harajuku was said, "the Porsche 991") asks about something absent, while
#: the same topic under another name scores as a near miss. Every calibrated probability of
#: such a query is multiplied by this, so only a strong hit still passes the abstention gate.
#: Chosen by cross-validation on LongMemEval-S's development half (docs/retrieval.md: the curve).
UNSEEN_NAME_FACTOR = 0.5
#: The same for a query's other words of :data:`MIN_ABSENT_LEN` letters or more the memory
#: never held ("practicing violin", "my undergrad course", "how old"): weaker evidence of
#: absence (an answerable question often says what its evidence paraphrases), so a smaller
#: step, and only when the index holds at least :data:`ABSENT_KNOWN_MIN` of the query's terms:
#: a query most of whose words are absent is a paraphrase the vector leg carries (demo-home's
#: "whose computer got damaged on the trip?"); one missing word beside matched ones is a detail
#: never said. All three chosen by cross-validation on LongMemEval-S's development half
#: (``benchmarks/cv_unseen_names.py``; docs/retrieval.md).
UNSEEN_WORD_FACTOR = 0.8
MIN_ABSENT_LEN = 3
ABSENT_KNOWN_MIN = 0.7


def unseen_terms(cands: Candidates) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The query's words that no chunk holds (phrases of the OR keyword query with a
    document count of 0; no word of a date): its names (past the first word with a capital
    letter, or with a digit), then its other words of :data:`MIN_ABSENT_LEN` letters or more."""
    if not cands.keyword_query or not cands.keyword_df:
        return (), ()
    words = [w for w in tokens(cands.query) if not DATE_WORD.fullmatch(w)]
    names = {w.lower() for i, w in enumerate(words)
             if (i > 0 and any(c.isupper() for c in w)) or any(c.isdigit() for c in w)}
    plain = {w.lower() for w in words if len(w) >= MIN_ABSENT_LEN} - names
    phrases = [p.strip().strip('"') for p in cands.keyword_query.split(" OR ")]
    if len(phrases) != len(cands.keyword_df):
        return (), ()
    absent = [p.lower() for p, d in zip(phrases, cands.keyword_df, strict=True) if d == 0]
    return (tuple(p for p in absent if p in names), tuple(p for p in absent if p in plain))


def hit_features(q: QueryEvidence, *, fused: float, rank: int, top_fused: float,
                 top_both: bool) -> dict[str, float]:
    """One hit's :data:`FEATURES`: its fused score and 1-based rank in the fused order, the
    query's best fused score and whether both legs found the top hit."""
    return {"fused": fused, "inv_rank": 1.0 / max(1, rank), "top_cos": q.top_cos,
            "top_kw": q.top_kw, "known": q.known, "top_both": 1.0 if top_both else 0.0,
            "top_fused": top_fused}


def applicable(cands: Candidates) -> bool:
    """Calibration reads both legs' evidence: hybrid candidates whose keyword leg ran the OR
    query (its phrase counts are known) or had no term to ask (punctuation, emoji: no keyword
    evidence at all, which is itself evidence)."""
    return cands.mode == "hybrid" and (cands.keyword_rows > 0 or (
        cands.keyword_query is None and not cands.keyword))
