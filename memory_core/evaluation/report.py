"""Reports: one configuration's metrics (:class:`RunResult`), a whole evaluation
(:class:`EvalReport`) as Markdown or JSON, a sweep's pivot table, and per-query wins and losses."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .metrics import METRIC_KEYS


@dataclass
class RunResult:
    """One configuration's metrics and per-query rows."""

    label: str
    settings: dict[str, Any]
    leg: str | None
    metrics: dict[str, Any]
    per_query: list[dict[str, Any]]


@dataclass
class EvalReport:
    """What :func:`run_eval` measured: one :class:`RunResult` per configuration.

    ``metrics`` and ``per_query`` are the first (primary) configuration's; ``runs`` has them all
    (legs included when asked); ``audit`` is the primary configuration's leg audit.
    """

    query_set: str
    level: str
    runs: list[RunResult]
    skipped: dict[str, int]
    info: dict[str, Any] = field(default_factory=dict)
    audit: dict[str, Any] | None = None

    @property
    def metrics(self) -> dict[str, Any]:
        return self.runs[0].metrics

    @property
    def per_query(self) -> list[dict[str, Any]]:
        return self.runs[0].per_query

    def run(self, label: str) -> RunResult:
        """The run labelled ``label`` (KeyError if there is none)."""
        for r in self.runs:
            if r.label == label:
                return r
        raise KeyError(label)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, per-query rows included."""
        return {
            "query_set": self.query_set, "level": self.level, "skipped": self.skipped,
            "info": self.info,
            "runs": [{"label": r.label, "leg": r.leg, "settings": r.settings,
                      "metrics": r.metrics, "per_query": r.per_query} for r in self.runs],
            **({"audit": self.audit} if self.audit else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=1)

    def to_markdown(self) -> str:
        """Tables: the main metrics per run, then per category, then the leg audit."""
        lines = [f"### {self.query_set}", ""]
        n = self.runs[0].metrics["n_queries"] if self.runs else 0
        skipped = ", ".join(f"{v} {k}" for k, v in self.skipped.items()) or "none"
        lines.append(f"{n} queries (skipped: {skipped}); chunk level unless marked *file*.")
        lines.append("")
        lines += markdown_table([(r.label, r.metrics) for r in self.runs])
        if self.runs and len(self.runs[0].metrics["by_category"]) > 1:
            lines += ["", "Success@5 / Recall@5 by category (chunk level):", ""]
            lines += _category_table(self.runs, lambda b: f"{b['chunk']['success@5']:.3f} / "
                                    f"{b['chunk']['recall@5']:.3f}")
        if self.runs and "session" in self.runs[0].metrics:
            lines += ["", *session_markdown(self.runs)]
        apart = [(r.label, r.metrics["apart"]) for r in self.runs if "apart" in r.metrics]
        if apart:
            lines += ["", "Reported apart (adversarial: false premise; LongMemEval: abstention):",
                      ""]
            lines += markdown_table(apart)
        if self.audit:
            lines += ["", f"Leg audit of {self.audit['config']} (pool {self.audit['pool']} per "
                      "leg):", ""]
            lines.append("| " + " | ".join(self.audit["summary"]) + " |")
            lines.append("|---" * len(self.audit["summary"]) + "|")
            lines.append("| " + " | ".join(str(v) for v in self.audit["summary"].values())
                         + " |")
        return "\n".join(lines) + "\n"


def markdown_table(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """One line per labelled metrics dict: the protocol's headline numbers."""
    head = ("| run | S@1 | S@5 | R@5 | R@10 | MRR@10 | nDCG@10 | file S@5 | file nDCG@10 | "
            "zero | results | p50 ms |")
    out = [head, "|---" * 12 + "|"]
    for label, m in rows:
        c, f = m["chunk"], m["file"]
        lat = m.get("latency_ms", {}).get("p50", float("nan"))
        out.append(
            f"| {label} | {c['success@1']:.3f} | {c['success@5']:.3f} | {c['recall@5']:.3f} | "
            f"{c['recall@10']:.3f} | {c['mrr@10']:.3f} | {c['ndcg@10']:.3f} | "
            f"{f['success@5']:.3f} | {f['ndcg@10']:.3f} | {m['zero_result_rate']:.1%} | "
            f"{m['mean_results']:.1f} | {lat:.0f} |")
    return out


def session_markdown(runs: Sequence[RunResult]) -> list[str]:
    """LongMemEval's session-level metrics (the benchmark's own mapping) per run, then
    ``recall_any@5`` / ``recall_all@5`` by question type."""
    ks = (1, 3, 5, 10, 30, 50)
    out = ["Session level, LongMemEval's mapping (recall_any / recall_all / ndcg_any):", "",
           "| run | " + " | ".join(f"@{k}" for k in ks) + " |", "|---" * (len(ks) + 1) + "|"]
    for r in runs:
        s = r.metrics.get("session", {})
        out.append(f"| {r.label} | " + " | ".join(
            f"{s.get(f'recall_any@{k}', 0):.3f} / {s.get(f'recall_all@{k}', 0):.3f} / "
            f"{s.get(f'ndcg_any@{k}', 0):.3f}" for k in ks) + " |")
    out += ["", "recall_any@5 / recall_all@5 / chunk Success@5 by question type:", ""]
    return out + _category_table(runs, lambda b: (
        f"{b['session']['recall_any@5']:.3f} / {b['session']['recall_all@5']:.3f} / "
        f"{b['chunk']['success@5']:.3f}" if "session" in b else None))


def _category_table(runs: Sequence[RunResult], cell: Callable[[Mapping[str, Any]], str | None]
                   ) -> list[str]:
    """A row per run, a column per category of the first run (with its query count): ``cell``
    of the run's figures in that category, "–" where it has none."""
    cats = runs[0].metrics["by_category"]
    out = ["| run | " + " | ".join(f"{c} ({v['n_queries']})" for c, v in cats.items()) + " |",
           "|---" * (len(cats) + 1) + "|"]
    for r in runs:
        bc = r.metrics["by_category"]
        out.append(f"| {r.label} | " + " | ".join(
            (cell(bc[c]) if c in bc else None) or "–" for c in cats) + " |")
    return out


def sweep_markdown(rows: Sequence[Mapping[str, Any]], metric: str = "success@5") -> str:
    """A pivot of ``metric`` over the first two swept fields (others: best value shown)."""
    if not rows:
        return ""
    keys = [k for k in rows[0] if k not in (*METRIC_KEYS, "file_success@5", "file_ndcg@10",
                                            "zero_result_rate", "mean_results", "n_queries")]
    varying = [k for k in keys if len({json.dumps(r[k]) for r in rows}) > 1]
    keys = (varying + [k for k in keys if k not in varying]) if len(keys) > 1 else keys
    if len(varying) < 2:  # one column: the first field (none swept: "config")
        out = [f"| {keys[0] if keys else 'config'} | {metric} |", "|---|---|"]
        out += [f"| {r[keys[0]] if keys else ''} | {r[metric]:.3f} |" for r in rows]
        return "\n".join(out) + "\n"
    a, b = keys[0], keys[1]
    avals = list(dict.fromkeys(r[a] for r in rows))
    bvals = list(dict.fromkeys(r[b] for r in rows))
    cell: dict[tuple[Any, Any], float] = {}
    for r in rows:
        k = (r[a], r[b])
        cell[k] = max(cell.get(k, -1.0), r[metric])
    out = [f"{metric}: rows {a}, columns {b}" + (f" (best over {', '.join(keys[2:])})"
                                                 if keys[2:] else ""), "",
           f"| {a} \\ {b} | " + " | ".join(str(v) for v in bvals) + " |",
           "|---" * (len(bvals) + 1) + "|"]
    for av in avals:
        out.append(f"| {av} | " + " | ".join(
            f"{cell[(av, bv)]:.3f}" if (av, bv) in cell else "–" for bv in bvals) + " |")
    best = max(rows, key=lambda r: r[metric])
    out += ["", "best: " + ", ".join(f"{k}={best[k]}" for k in keys) + f" → {best[metric]:.3f}"]
    return "\n".join(out) + "\n"


# =============================================================================== compare



def compare(report_a: EvalReport | RunResult, report_b: EvalReport | RunResult,
            metric: str = "ndcg@10") -> list[dict[str, Any]]:
    """Queries on which two runs differ in ``metric`` (chunk level), biggest difference first.

    Each row: ``qid``, ``query``, ``category``, both values and first relevant ranks, ``delta``
    (b − a) and ``winner`` (the label of the better run). Reports are compared through their
    primary run; queries are matched by ``(workspace, qid)``.
    """
    ra = report_a.runs[0] if isinstance(report_a, EvalReport) else report_a
    rb = report_b.runs[0] if isinstance(report_b, EvalReport) else report_b
    la, lb = ra.label, rb.label
    if la == lb:
        la, lb = f"{la} (a)", f"{lb} (b)"
    by_b = {(r["workspace"], r["qid"]): r for r in rb.per_query}
    out = []
    for r in ra.per_query:
        o = by_b.get((r["workspace"], r["qid"]))
        if o is None:
            continue
        va, vb = r["metrics"]["chunk"][metric], o["metrics"]["chunk"][metric]
        if abs(va - vb) < 1e-12:
            continue
        out.append({"qid": r["qid"], "query": r["query"], "category": r["category"],
                    "workspace": r["workspace"], "a": va, "b": vb, "delta": vb - va,
                    "a_first_rank": r["metrics"]["chunk"]["first_rank"],
                    "b_first_rank": o["metrics"]["chunk"]["first_rank"],
                    "winner": lb if vb > va else la})
    out.sort(key=lambda x: -abs(x["delta"]))
    return out


def compare_markdown(rows: Sequence[Mapping[str, Any]], limit: int = 30) -> str:
    """The win/loss list as a Markdown table (the ``limit`` biggest differences)."""
    wins: dict[str, int] = {}
    for r in rows:
        wins[r["winner"]] = wins.get(r["winner"], 0) + 1
    out = ["Wins: " + ", ".join(f"{k} {v}" for k, v in wins.items()) if wins
           else "No query differs.", ""]
    if rows:
        out += ["| qid | category | query | a (rank) | b (rank) | winner |",
                "|---|---|---|---|---|---|"]
        for r in rows[:limit]:
            q = r["query"].replace("|", "\\|")[:70]
            out.append(f"| {r['qid']} | {r['category']} | {q} | {r['a']:.2f} "
                       f"({r['a_first_rank'] or '–'}) | {r['b']:.2f} "
                       f"({r['b_first_rank'] or '–'}) | {r['winner']} |")
    return "\n".join(out) + "\n"
