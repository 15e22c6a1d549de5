"""Fitting the default profile's calibration and its abstention gate, by cross-validation.

What ``scripts/fit_calibration.py`` runs; kept beside it, out of the shipped package (issue
#32): the engine reads the fitted result (``memory_core/base/calibration_fitted.json`` through
:mod:`memory_core.read.calibration`), never this code.

**Off-topic probes**: questions whose right answer is "nothing stored". Four sets are written
for this project and kept in ``examples/probes/`` (general-knowledge questions in English and
in Chinese, nonsense strings, and questions a user might ask the demo team's memory that it
does not answer). A fifth kind is another dataset's questions asked of a workspace they have
nothing to do with: XQuAD's English and Chinese questions (Wikipedia paragraphs) asked of a
LoCoMo conversation or of the demo, read from ``../shared/datasets`` at run time, never copied.
A probe is an :class:`EvalQuery` with no evidence; :func:`probe_set` attaches probes to the
workspaces of a labelled query set, so the evaluator's candidate fetch (and its cache) serves
them like any other query.

**The fit**: the candidates of every labelled query and of every off-topic probe are fetched
once (the evaluator's cache); each query's fused candidates (the ``normalized`` fusion,
uncalibrated) become rows of :data:`memory_core.read.calibration.FEATURES` with a label (the
chunk covers an evidence line; a probe's chunks never do). Then, per fold (one LoCoMo
conversation and one fifth of the probes held out), a logistic model and an isotonic
correction of its output are fitted on the training rows (each probe's rows weighing
:data:`PROBE_WEIGHT`), the abstention gate (``abstain_below``: nothing unless the best hit's
probability reaches it) is chosen on the training queries as the highest that costs no
labelled set more than :data:`MAX_DROP` of S@5, and the held-out queries and probes are scored
with that fold's model and gate. Nothing here opens an index; the fits are numpy.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from memory_core.base.config import SearchSettings
from memory_core.base.locations import REPO_ROOT, datasets_dir
from memory_core.evaluation.datasets import EvalQuery, QuerySet
from memory_core.evaluation.metrics import aggregate, covers, score_ranking
from memory_core.evaluation.runner import CollectedQuery
from memory_core.read.calibration import FEATURES, Calibration
from memory_core.read.fusion import fuse, hit_evidence

# ------------------------------------------------------------------------------ the probes

PROBE_DIR = REPO_ROOT / "examples" / "probes"
#: The project's own probe files, by kind.
OWN_KINDS: tuple[str, ...] = ("general-en", "general-zh", "nonsense", "demo-no-answer")
#: Another dataset's questions: XQuAD (en, zh), every ``XQUAD_STEP``-th question.
XQUAD_KINDS: dict[str, str] = {"xquad-en": "xquad/beir-en", "xquad-zh": "xquad/beir-zh"}
XQUAD_STEP = 8


@dataclass(frozen=True)
class Probe:
    """One off-topic query: ``kind`` names its set."""

    qid: str
    query: str
    kind: str

    def part(self, k: int) -> int:
        """Its fold among ``k`` (a stable hash of its id): probes are held out like queries."""
        return int(hashlib.sha1(self.qid.encode("utf-8")).hexdigest()[:8], 16) % k


def load_probes(kinds: Sequence[str] | None = None) -> list[Probe]:
    """The probes of ``kinds`` (default: every kind whose data exists here)."""
    out: list[Probe] = []
    for kind in kinds or (*OWN_KINDS, *XQUAD_KINDS):
        if kind in XQUAD_KINDS:
            out.extend(_xquad(kind))
            continue
        path = PROBE_DIR / f"{kind}.jsonl"
        if not path.is_file():
            raise ValueError(f"no probe set {kind!r} ({path} not found)")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out.append(Probe(str(rec["qid"]), str(rec["query"]), kind))
    return out


def _xquad(kind: str) -> list[Probe]:
    path = datasets_dir() / XQUAD_KINDS[kind] / "queries.jsonl"
    if not path.is_file():
        return []  # the shared data is absent: that kind is left out
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if line.strip() and i % XQUAD_STEP == 0:
            rec = json.loads(line)
            out.append(Probe(f"{kind}-{rec['_id']}", str(rec["text"]), kind))
    return out


def probe_set(base: QuerySet, probes: Sequence[Probe]) -> QuerySet:
    """``probes`` asked of every workspace of ``base`` (ids ``<workspace>/<probe id>``)."""
    queries = [EvalQuery(f"{ws}/{p.qid}" if ws else p.qid, p.query, p.kind, (), ws)
               for ws in base.workspaces for p in probes]
    return QuerySet(f"probes on {base.name}", queries, dict(base.workspaces),
                    dict(base.store_dirs), base.level, {}, f"off-topic probes on {base.name}")


def probe_of(query: EvalQuery) -> str:
    """The probe id of a query made by :func:`probe_set`."""
    return query.qid.split("/", 1)[-1]


# ------------------------------------------------------------------------------ the rows

#: The abstention gates tried (``abstain_below`` on the best hit's probability).
GATES: tuple[float, ...] = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
#: A probe's rows weigh this much against a labelled question's in the fit: the probes
#: outnumber the questions (2,240 to 997 on LoCoMo), and a user's off-topic questions are a
#: minority of what they ask; at 1.0 the model learns a prior of two off-topic questions in
#: three and underestimates every answerable hit (held-out ECE 0.079 against 0.051 at 0.3).
PROBE_WEIGHT = 0.3
#: The most S@5 the gate may cost any labelled set on the training folds (against no gate).
MAX_DROP = 0.01


@dataclass
class QueryRows:
    """One query's fused candidates: their citations, features and labels."""

    collected: CollectedQuery
    cites: list[tuple[str, int, int]]
    x: np.ndarray  # (hits, features)
    y: np.ndarray  # (hits,) 1.0 when the chunk covers an evidence line
    probe: bool
    set_name: str = ""
    #: what the engine multiplies the query's probabilities by: a name or word the index never
    #: holds (:meth:`QueryEvidence.factor`); the model is fitted before it, scored after it
    factor: float = 1.0


def query_rows(collected: Sequence[CollectedQuery], base: SearchSettings,
               probe: bool = False) -> list[QueryRows]:
    """Every query's fused candidates under ``base`` (uncalibrated, no gate) as feature rows."""
    s = replace(base, calibration="", min_score=0.0)
    out = []
    for c in collected:
        cands = next(iter(c.cands.values()))  # collected for these settings alone
        res = fuse(cands, s)
        hits = list(res.hits) + list(res.below_gate)  # the fused order (no gate)
        q, feats = hit_evidence(cands, hits)
        x = np.array([[f[n] for n in FEATURES] for f in feats], dtype=float).reshape(
            len(hits), len(FEATURES))
        y = np.array([1.0 if any(covers(h.path, h.start_line, h.end_line, ev)
                                 for ev in c.query.relevant) else 0.0 for h in hits])
        out.append(QueryRows(c, [(h.path, h.start_line, h.end_line) for h in hits], x, y,
                             probe, factor=q.factor()))
    return out


# ------------------------------------------------------------------------------ the models


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1.0, iters: int = 60,
                 weight: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """L2-regularised, weighted logistic regression by Newton's method on standardised
    features. Returns ``(mean, scale, weights, intercept)``; the intercept is not penalised.
    """
    sw = np.ones(len(y)) if weight is None else weight
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    pen = np.full(z.shape[1], l2)
    pen[0] = 0.0
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -35, 35)))
        g = z.T @ (sw * (p - y)) + pen * w
        h = (z * (sw * p * (1 - p))[:, None]).T @ z + np.diag(pen + 1e-9)
        step = np.linalg.solve(h, g)
        w -= step
        if float(np.max(np.abs(step))) < 1e-8:
            break
    return mean, scale, w[1:], float(w[0])


def fit_isotonic(p: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None,
                 knots: int = 200) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """An increasing map ``p → P(y=1)`` (pool-adjacent-violators over ``knots`` bins of
    equal weight along ``p``), as knots for :func:`memory_core.read.calibration.interp`."""
    sw = np.ones(len(y)) if weight is None else weight
    order = np.argsort(p, kind="stable")
    ps, ys, ws = p[order], y[order], sw[order]
    cum = np.cumsum(ws)
    edges = np.r_[0, np.searchsorted(cum, np.linspace(0, cum[-1], knots + 1)[1:-1]), len(ps)]
    blocks = [[float(np.average(ps[a:b], weights=ws[a:b])),
               float(np.average(ys[a:b], weights=ws[a:b])), float(ws[a:b].sum())]
              for a, b in itertools.pairwise(edges) if b > a]
    merged: list[list[float]] = []
    for b in blocks:
        merged.append(b)
        while len(merged) > 1 and merged[-2][1] >= merged[-1][1]:
            x2, y2, n2 = merged.pop()
            x1, y1, n1 = merged.pop()
            n = n1 + n2
            merged.append([(x1 * n1 + x2 * n2) / n, (y1 * n1 + y2 * n2) / n, n])
    if len(merged) == 1:
        return (), ()
    return tuple(round(m[0], 6) for m in merged), tuple(round(m[1], 6) for m in merged)


def fit_calibration(rows: Sequence[QueryRows], name: str, isotonic: bool = True,
                    note: str = "") -> Calibration:
    """The calibration fitted on every row of ``rows`` (a probe's rows weigh
    :data:`PROBE_WEIGHT`)."""
    used = [r for r in rows if len(r.y)]
    x = np.vstack([r.x for r in used])
    y = np.concatenate([r.y for r in used])
    w = np.concatenate([np.full(len(r.y), PROBE_WEIGHT if r.probe else 1.0) for r in used])
    mean, scale, coef, b = fit_logistic(x, y, weight=w)
    model = Calibration(name, FEATURES, tuple(round(float(v), 6) for v in mean),
                        tuple(round(float(v), 6) for v in scale),
                        tuple(round(float(v), 6) for v in coef), round(b, 6), note=note)
    if isotonic:
        xs, ys = fit_isotonic(predict(model, x), y, w)
        model = replace(model, iso_x=xs, iso_y=ys)
    return model


def predict(model: Calibration, x: np.ndarray) -> np.ndarray:
    """:meth:`Calibration.probability` of every row of ``x`` (vectorised, same floats)."""
    z = model.intercept + ((x - np.array(model.mean)) / np.array(model.scale)) @ np.array(
        model.weights)
    p = 1.0 / (1.0 + np.exp(-z))
    if model.iso_x:
        p = np.interp(p, model.iso_x, model.iso_y)
    return p


# ------------------------------------------------------------------------------ scoring


def reliability(p: Sequence[float], y: Sequence[float], bins: int = 10
                ) -> list[tuple[float, int, float, float]]:
    """Per equal-width bin of the prediction: ``(lower edge, hits, mean prediction, share
    relevant)``, bins with hits only (the reliability diagram as a table)."""
    pa, ya = np.asarray(p, dtype=float), np.asarray(y, dtype=float)
    idx = np.minimum((pa * bins).astype(int), bins - 1)
    return [(b / bins, int((idx == b).sum()), float(pa[idx == b].mean()),
             float(ya[idx == b].mean())) for b in range(bins) if (idx == b).any()]


def ece(p: Sequence[float], y: Sequence[float], bins: int = 10) -> float:
    """Expected calibration error: over ``bins`` equal-width bins of the predicted
    probability, the share of hits in the bin times |mean prediction − share relevant|."""
    return float(sum(n / len(p) * abs(mean_p - share)
                     for _, n, mean_p, share in reliability(p, y, bins)))


@dataclass
class Scored:
    """One query scored under a model and a gate."""

    row: dict[str, Any]  # the evaluator's per-query row (metrics, apart, category)
    p: list[float]  # the returned hits' probabilities
    y: list[float]  # and whether each is relevant
    empty: bool


def score_query(r: QueryRows, model: Calibration, gate: float, max_results: int = 6) -> Scored:
    """What the calibrated fusion returns for ``r``: nothing when the best hit's probability
    (times the query's :attr:`QueryRows.factor`, as the engine scales it) is below ``gate``
    (``abstain_below``), else the hits in the fused order, at most ``max_results`` (no
    minScore: the fit's settings have none)."""
    p = predict(model, r.x) * r.factor if len(r.y) else np.zeros(0)
    keep = [] if not len(p) or float(p[0]) < gate else list(range(len(p)))[:max_results]
    ranked = [r.cites[i] for i in keep]
    c = r.collected
    m = score_ranking(ranked, c.query.relevant, c.ideal_chunks, c.ideal_files)
    row = {"qid": c.query.qid, "category": c.query.category, "apart": c.query.apart,
           "workspace": c.query.workspace, "ideal_chunks": c.ideal_chunks, "metrics": m,
           "latency_ms": 0.0}
    return Scored(row, [float(p[i]) for i in keep], [float(r.y[i]) for i in keep], not keep)


def summarise(scored: Sequence[Scored], probes: Sequence[Scored]) -> dict[str, Any]:
    """The figures of one evaluation: S@5 / R@5 of the labelled main set, the adversarial
    questions' empty share, the probes' empty share (by kind), ECE of the returned hits."""
    agg = aggregate([s.row for s in scored]) if scored else {}
    main = [s for s in scored if not s.row["apart"]]
    apart = [s for s in scored if s.row["apart"]]
    kinds: dict[str, list[bool]] = {}
    for s in probes:
        kinds.setdefault(s.row["category"], []).append(s.empty)
    p = [v for s in main for v in s.p]
    y = [v for s in main for v in s.y]
    return {
        "success@5": agg.get("chunk", {}).get("success@5", 0.0),
        "recall@5": agg.get("chunk", {}).get("recall@5", 0.0),
        "mrr@10": agg.get("chunk", {}).get("mrr@10", 0.0),
        "mean_results": agg.get("mean_results", 0.0),
        "answerable_empty": _share([s.empty for s in main]),
        "adversarial_empty": _share([s.empty for s in apart]),
        "probe_empty": _share([s.empty for s in probes]),
        "probe_empty_by_kind": {k: _share(v) for k, v in sorted(kinds.items())},
        "n_main": len(main), "n_probes": len(probes), "n_hits": len(p),
        "ece": ece(p, y), "reliability": reliability(p, y),
        "mean_p": float(np.mean(p)) if p else 0.0,
        "precision": float(np.mean(y)) if y else 0.0,
        "by_category": {c: (v["chunk"]["success@5"], v["chunk"]["recall@5"])
                        for c, v in agg.get("by_category", {}).items()},
    }


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def choose_gate(labelled: Mapping[str, Sequence[QueryRows]], probes: Sequence[QueryRows],
                model: Calibration) -> tuple[float, dict[str, Any]]:
    """The highest gate of :data:`GATES` that costs no set of ``labelled`` more than
    :data:`MAX_DROP` of S@5 (the answerable questions it would leave unanswered), against the
    same model without a gate; with its figures on the first set and ``probes``. More probes
    answered empty is all a higher gate buys, so the highest one within the budget is the
    choice."""
    def s5(rows: Sequence[QueryRows], g: float) -> float:
        return float(summarise([score_query(r, model, g) for r in rows], [])["success@5"])

    free = {n: s5(rows, 0.0) for n, rows in labelled.items() if rows}
    chosen = GATES[0]
    for g in sorted(GATES):
        if all(free[n] - s5(rows, g) <= MAX_DROP + 1e-12 for n, rows in labelled.items()
               if rows):
            chosen = g
    first = next(iter(labelled.values()))
    return chosen, summarise([score_query(r, model, chosen) for r in first],
                             [score_query(r, model, chosen) for r in probes])
