"""Run A against run B: per-metric differences with a 95 % interval and a p-value, per-query wins
and losses, and regression flags.

Both runs are reduced to per-query metric values (from TREC files and qrels with
:mod:`.run_metrics`, or from saved runs' own per-query rows); :func:`compare_per_query` pairs the
queries both have and tests each metric with :mod:`.significance`. ``delta`` is ``b − a``: B is
the change, A the baseline, so a *win* is a query B ranks better and a *loss* one it ranks worse.
A *regression* is a query whose first relevant rank fell by more than ``threshold`` places (a
query whose relevant result vanished from the list falls to rank ``depth + 1``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .run_metrics import RUN_METRICS, resolve, score_run
from .significance import DEFAULT_ROUNDS, DEFAULT_SEED, bootstrap_ci, randomization_p

#: First-rank drop (in places) beyond which a query is flagged as a regression.
DEFAULT_THRESHOLD = 3
#: Rank depth: a query with no relevant result in the list counts as ranked here + 1.
DEPTH = 10


@dataclass
class Comparison:
    """What :func:`compare_per_query` found; ``to_dict()`` is the ``--json`` form."""

    label_a: str
    label_b: str
    primary: str
    metrics: dict[str, dict[str, Any]]
    per_query: list[dict[str, Any]]
    regressions: list[dict[str, Any]]
    settings: dict[str, Any] = field(default_factory=dict)
    only_in: dict[str, int] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.per_query)

    def wins(self, metric: str | None = None) -> list[dict[str, Any]]:
        """Queries B ranks better than A on ``metric`` (default: the primary one)."""
        m = metric or self.primary
        return [r for r in self.per_query if r["b"][m] > r["a"][m] + 1e-12]

    def losses(self, metric: str | None = None) -> list[dict[str, Any]]:
        """Queries B ranks worse than A on ``metric`` (default: the primary one)."""
        m = metric or self.primary
        return [r for r in self.per_query if r["b"][m] < r["a"][m] - 1e-12]

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.label_a, "b": self.label_b, "n_queries": self.n_queries,
                "primary": self.primary, "metrics": self.metrics,
                "wins": [r["qid"] for r in self.wins()],
                "losses": [r["qid"] for r in self.losses()],
                "regressions": self.regressions, "per_query": self.per_query,
                "settings": self.settings, "only_in": self.only_in}

    def to_markdown(self, limit: int = 20) -> str:
        """The metric table, then the biggest wins and losses and the regressions."""
        s = self.settings
        # "A" and "B" are the places on the command line, named once: a run file called
        # b.trec given first read "b.trec (a) vs a.trec (b)"
        lines = [f"### A (baseline) = {self.label_a} · B (change) = {self.label_b}: "
                 f"{self.n_queries} queries", ""]
        if s.get("scored_against"):
            lines += [f"Scored against {s['scored_against']}.", ""]
        lines += [f"95 % paired-bootstrap interval and two-sided paired randomization test "
                 f"({s.get('rounds')} rounds each, seed {s.get('seed')}).", "",
                 "| metric | A | B | delta B − A | 95 % ci | p | wins of B | losses of B |",
                 "|---|---|---|---|---|---|---|---|"]
        for m, v in self.metrics.items():
            lo, hi = v["ci"]
            lines.append(f"| {m} | {v['a']:.4f} | {v['b']:.4f} | {v['delta']:+.4f} | "
                         f"[{lo:+.4f}, {hi:+.4f}] | {v['p_value']:.4f} | {v['wins']} | "
                         f"{v['losses']} |")
        for title, rows in ((f"Wins of B ({self.primary})", self.wins()),
                            (f"Losses of B ({self.primary})", self.losses())):
            rows = sorted(rows, key=lambda r: -abs(r["delta"]))[:limit]
            if rows:
                lines += ["", f"{title}:", "", "| qid | query | A | B | first rank A → B |",
                          "|---|---|---|---|---|"]
                lines += [f"| {r['qid']} | {str(r.get('query', ''))[:60].replace('|', '/')} | "
                          f"{r['a'][self.primary]:.3f} | {r['b'][self.primary]:.3f} | "
                          f"{r['a_first_rank'] or '–'} → {r['b_first_rank'] or '–'} |"
                          for r in rows]
        lines += ["", f"Regressions (first relevant rank fell by more than "
                  f"{s.get('threshold')}): {len(self.regressions)}"]
        lines += [f"- {r['qid']}: {r['a_first_rank'] or '–'} → {r['b_first_rank'] or '–'}"
                  for r in self.regressions[:limit]]
        return "\n".join(lines) + "\n"


def _rank(r: int | None) -> int:
    return r if r is not None and r <= DEPTH else DEPTH + 1


def compare_per_query(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]],
                      metrics: Sequence[str] = RUN_METRICS, *, label_a: str = "a",
                      label_b: str = "b", primary: str = "ndcg@10",
                      queries: Mapping[str, str] | None = None,
                      rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
                      threshold: int = DEFAULT_THRESHOLD) -> Comparison:
    """Pair the queries of ``a`` and ``b`` (``{qid: {metric: value, "first_rank": r}}``) and
    compare them on ``metrics``; ``queries`` gives query texts for the per-query rows."""
    if primary not in metrics:
        raise ValueError(f"primary metric {primary!r} is not among {', '.join(metrics)}")
    qids = [q for q in a if q in b]
    if not qids:
        raise ValueError("the two runs share no query")
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        va = [float(a[q][m]) for q in qids]
        vb = [float(b[q][m]) for q in qids]
        mean_a, mean_b = sum(va) / len(va), sum(vb) / len(vb)
        out[m] = {"a": mean_a, "b": mean_b, "delta": mean_b - mean_a,
                  "ci": list(bootstrap_ci(va, vb, rounds=rounds, seed=seed)),
                  "p_value": randomization_p(va, vb, rounds=rounds, seed=seed),
                  "wins": sum(1 for x, y in zip(va, vb, strict=True) if y > x + 1e-12),
                  "losses": sum(1 for x, y in zip(va, vb, strict=True) if y < x - 1e-12)}
    rows: list[dict[str, Any]] = []
    regressions: list[dict[str, Any]] = []
    for q in qids:
        fa, fb = a[q].get("first_rank"), b[q].get("first_rank")
        row: dict[str, Any] = {
            "qid": q, "query": (queries or {}).get(q, ""),
            "a": {m: float(a[q][m]) for m in metrics}, "b": {m: float(b[q][m]) for m in metrics},
            "delta": float(b[q][primary]) - float(a[q][primary]),
            "a_first_rank": fa, "b_first_rank": fb}
        rows.append(row)
        drop = _rank(fb) - _rank(fa)
        if drop > threshold:
            regressions.append({"qid": q, "query": row["query"], "a_first_rank": fa,
                                "b_first_rank": fb, "drop": drop})
    regressions.sort(key=lambda r: -r["drop"])
    return Comparison(label_a, label_b, primary, out, rows, regressions,
                      {"rounds": rounds, "seed": seed, "confidence": 0.95,
                       "threshold": threshold, "test": "paired randomization (two-sided)",
                       "interval": "paired bootstrap (percentile)"},
                      {"a": sum(1 for q in a if q not in b), "b": sum(1 for q in b if q not in a)})


def compare_runs(run_a: Mapping[str, Sequence[tuple[str, float]]],
                 run_b: Mapping[str, Sequence[tuple[str, float]]],
                 qrels: Mapping[str, Mapping[str, int]], *, label_a: str = "a",
                 label_b: str = "b", metrics: Sequence[str] = RUN_METRICS,
                 primary: str = "ndcg@10", queries: Mapping[str, str] | None = None,
                 rounds: int = DEFAULT_ROUNDS, seed: int = DEFAULT_SEED,
                 threshold: int = DEFAULT_THRESHOLD) -> Comparison:
    """Two TREC runs scored against the same qrels (:func:`~.run_metrics.score_run`), compared
    over the qrels' queries. Qrels that judge none of the runs' queries, or none of their
    documents (ids written another way), are a ``ValueError``, not "no difference"."""
    if not any(q in qrels for q in (*run_a, *run_b)):
        raise ValueError("the qrels judge none of the runs' queries (no query id in common): "
                         "nothing to compare")
    if not any(doc in qrels[q] for run in (run_a, run_b) for q, ranked in run.items()
               if q in qrels for doc in resolve([d for d, _ in ranked], qrels[q])):
        raise ValueError("the qrels judge none of the runs' documents (are the document ids "
                         "written the same way?): nothing to compare")
    return compare_per_query(score_run(run_a, qrels, metrics), score_run(run_b, qrels, metrics),
                             metrics, label_a=label_a, label_b=label_b, primary=primary,
                             queries=queries, rounds=rounds, seed=seed, threshold=threshold)
