"""Cross-validation: choose the fusion constants on some queries, measure them on the others.

A constant tuned on all the dev data and measured on the same data flatters itself (issue #14:
LoCoMo S@5 0.912 on the dev conversations, 0.892 on unseen ones). Here every constant is chosen
by grid search on the *training* folds only and scored on the held-out fold:

* LoCoMo (several workspaces): leave one conversation out, one fold per workspace;
* a set of one workspace (BEIR: XQuAD, SciFact): ``k`` folds of queries, assigned by a stable
  hash of the query id (the same split on every run and every machine).

The held-out figures are pooled over the folds (each query is scored exactly once, by settings
chosen without it) and their spread is the standard deviation of the per-fold figures. An
ablation refits with one constant pinned to its neutral value (0 for a bonus or a gate, equal
weights): a constant is worth keeping only if the held-out objective is better with it.

Fusion is pure, so the grid is fused from candidates fetched once per query (see
:func:`~memory_core.evaluation.runner.collect`); nothing here touches an index.
"""

from __future__ import annotations

import hashlib
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..base.config import SearchSettings
from ..index import MemoryIndex
from .datasets import QuerySet, load_query_set
from .metrics import aggregate
from .runner import (
    CollectedQuery,
    EvalConfig,
    Progress,
    collect,
    evaluate_rows,
    grid_configs,
    leg_configs,
)

#: What ``memory-core eval --cv`` tunes when no ``--grid`` is given: every constant of the
#: default profile's fusion.
DEFAULT_CV_GRID: dict[str, list[Any]] = {
    "vector_weight": [0.2, 0.3, 0.4, 0.5, 0.6],
    "min_score": [0.0, 0.05, 0.1, 0.15, 0.2],
    "date_hint": [0.0, 0.1, 0.2, 0.3],
}
#: The value that means "this constant does nothing" (untuned), for the ablation.
NEUTRAL: dict[str, Any] = {
    "vector_weight": 0.5, "min_score": 0.0, "date_hint": 0.0, "candidate_multiplier": 4,
    "mmr_enabled": False, "keyword_only_fill": False, "rrf_k": 60,
}
#: The figures the report shows (chunk level unless prefixed ``file_``).
SHOWN = ("success@1", "success@5", "recall@5", "mrr@10", "ndcg@10", "file_success@5")


@dataclass(frozen=True)
class Fold:
    """A named held-out part of the queries (indexes into the collected list)."""

    name: str
    test: tuple[int, ...]


def make_folds(collected: Sequence[CollectedQuery], k: int = 5) -> list[Fold]:
    """One fold per workspace when there are several (leave one conversation out), else ``k``
    folds of queries by a stable hash of their id."""
    by_ws: dict[str, list[int]] = {}
    for i, c in enumerate(collected):
        by_ws.setdefault(c.query.workspace, []).append(i)
    if len(by_ws) > 1:
        return [Fold(ws or "workspace", tuple(ix)) for ws, ix in by_ws.items()]
    k = max(2, k)
    parts: list[list[int]] = [[] for _ in range(k)]
    for i, c in enumerate(collected):
        h = int(hashlib.sha1(c.query.qid.encode("utf-8")).hexdigest()[:8], 16)
        parts[h % k].append(i)
    return [Fold(f"fold {j + 1}/{k}", tuple(ix)) for j, ix in enumerate(parts) if ix]


def parse_objective(text: str) -> tuple[str, ...]:
    """``"success@5+recall@5"`` → the chunk-level metrics whose sum is maximised."""
    names = tuple(t.strip() for t in text.split("+") if t.strip())
    if not names:
        raise ValueError("empty objective")
    return names


def _value(row: Mapping[str, Any], metric: str) -> float:
    level = "chunk"
    if metric.startswith("file_"):
        level, metric = "file", metric[len("file_"):]
    try:
        return float(row["metrics"][level][metric])
    except KeyError as e:
        raise ValueError(f"unknown metric {metric!r}") from e


def _objective(row: Mapping[str, Any], names: Sequence[str]) -> float:
    return sum(_value(row, n) for n in names)


def _distance(combo: Mapping[str, Any], base: SearchSettings) -> float:
    """How far a combination is from the base settings (ties in training go to the nearest)."""
    d = 0.0
    for k, v in combo.items():
        b = getattr(base, k, None)
        if isinstance(v, bool) or not isinstance(v, int | float):
            d += 0.0 if v == b else 1.0
        elif isinstance(b, int | float):
            d += abs(float(v) - float(b))
    return d


@dataclass
class CVResult:
    """Held-out figures of "tune on the other folds", per fold and pooled, with baselines."""

    query_set: str
    objective: tuple[str, ...]
    grid: Mapping[str, Sequence[Any]]
    folds: list[dict[str, Any]]
    pooled: dict[str, float]
    spread: dict[str, float]
    baselines: dict[str, dict[str, Any]]
    chosen_all: dict[str, Any]
    in_sample: dict[str, float]
    ablation: list[dict[str, Any]] = field(default_factory=list)
    n_queries: int = 0
    by_category: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"query_set": self.query_set, "objective": "+".join(self.objective),
                "grid": self.grid, "n_queries": self.n_queries, "folds": self.folds,
                "held_out": self.pooled, "spread": self.spread, "baselines": self.baselines,
                "chosen_on_all": self.chosen_all, "in_sample_of_chosen": self.in_sample,
                "ablation": self.ablation, "held_out_by_category": self.by_category}

    def to_markdown(self) -> str:
        """The per-fold table, the pooled held-out line against the baselines, the ablation."""
        obj = "+".join(self.objective)
        lines = [f"### Cross-validation of {self.query_set}", "",
                 f"{self.n_queries} queries, {len(self.folds)} folds; constants chosen on the "
                 f"training folds by {obj}, grid {_grid_text(self.grid)}.", "",
                 "| fold | n | chosen on the other folds | held-out S@5 | R@5 | MRR@10 | "
                 "nDCG@10 |", "| --- | --- | --- | --- | --- | --- | --- |"]
        for f in self.folds:
            h = f["held_out"]
            lines.append(f"| {f['fold']} | {f['n']} | {_combo_text(f['chosen'])} | "
                         f"{h['success@5']:.3f} | {h['recall@5']:.3f} | {h['mrr@10']:.3f} | "
                         f"{h['ndcg@10']:.3f} |")
        lines += ["", "| run (held-out, pooled) | " + " | ".join(SHOWN) + " |",
                  "| --- |" + " --- |" * len(SHOWN)]
        lines.append("| **tuned by CV** | " + " | ".join(
            f"**{self.pooled[m]:.3f}** ± {self.spread[m]:.3f}" for m in SHOWN) + " |")
        for label, b in self.baselines.items():
            lines.append(f"| {label} (fixed) | " + " | ".join(
                f"{b['pooled'][m]:.3f} ± {b['spread'][m]:.3f}" for m in SHOWN) + " |")
        lines += ["", f"Chosen on all folds: {_combo_text(self.chosen_all)} (in-sample "
                  + ", ".join(f"{m} {self.in_sample[m]:.3f}" for m in ("success@5", "recall@5"))
                  + ")."]
        if self.by_category:
            lines += ["", "Held-out S@5 / R@5 by category: "
                      + _by_category_text(self.by_category)]
        if self.ablation:
            lines += ["", f"Ablation (held-out {obj}, pooled; the constant pinned to its "
                      "neutral value, the others still tuned):", "",
                      "| constant | neutral | held-out with it | pinned | delta | folds won / "
                      "lost | keep |", "| --- | --- | --- | --- | --- | --- | --- |"]
            for a in self.ablation:
                lines.append(f"| {a['constant']} | {a['neutral']} | {a['with']:.4f} | "
                             f"{a['pinned']:.4f} | {a['delta']:+.4f} | {a['folds_won']} / "
                             f"{a['folds_lost']} | {'yes' if a['keep'] else 'no'} |")
        return "\n".join(lines) + "\n"


def _by_category_text(by_category: Mapping[str, Mapping[str, float]]) -> str:
    """``multi-hop (142) 0.831 / 0.539; …``: each category's held-out S@5 / R@5."""
    return "; ".join(f"{c} ({v['n_queries']:.0f}) {v['success@5']:.3f} / {v['recall@5']:.3f}"
                     for c, v in by_category.items()) + "."


def _grid_text(grid: Mapping[str, Sequence[Any]]) -> str:
    """``vector_weight ∈ {0.3, 0.5}, date_hint ∈ {0.0, 0.2}``: the grid, for the report."""
    return ", ".join(f"{k} ∈ {{{', '.join(str(v) for v in vs)}}}" for k, vs in grid.items())


def _combo_text(combo: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in combo.items()) or "(fixed)"


def _figures(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    m = aggregate(rows)
    out = {k: float(m["chunk"][k]) for k in SHOWN if not k.startswith("file_")}
    out["file_success@5"] = float(m["file"]["success@5"])
    return out


def _by_category(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, float]]:
    """Per category of ``rows``: its query count, chunk S@5 and R@5 (the report's line)."""
    return {c: {"n_queries": float(v["n_queries"]), "success@5": v["chunk"]["success@5"],
                "recall@5": v["chunk"]["recall@5"]}
            for c, v in aggregate(rows)["by_category"].items()}


def _spread(per_fold: Sequence[Mapping[str, float]]) -> dict[str, float]:
    return {m: (statistics.stdev([f[m] for f in per_fold]) if len(per_fold) > 1 else 0.0)
            for m in SHOWN}


class _Table:
    """Per-query rows of each configuration, computed once and shared by every refit."""

    def __init__(self, collected: Sequence[CollectedQuery]) -> None:
        self.collected = collected
        self.rows: dict[str, list[dict[str, Any]]] = {}

    def rows_of(self, cfg: EvalConfig) -> list[dict[str, Any]]:
        if cfg.label not in self.rows:
            self.rows[cfg.label] = evaluate_rows(self.collected, cfg)
        return self.rows[cfg.label]


def _mean_objective(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> float:
    return sum(_objective(r, names) for r in rows) / max(1, len(rows))


def cross_validate(collected: Sequence[CollectedQuery], base: SearchSettings,
                   grid: Mapping[str, Sequence[Any]] | None = None, *,
                   objective: str = "success@5+recall@5", k: int = 5,
                   baselines: Mapping[str, EvalConfig | SearchSettings] | None = None,
                   ablate: bool = True, query_set: str = "") -> CVResult:
    """Tune ``grid`` (over ``base``) on the training folds, report the held-out folds.

    ``baselines`` are fixed configurations (a profile as shipped, a leg alone) scored on the
    same folds, for comparison. With ``ablate``, each constant of the grid with more than one
    value is pinned to its :data:`NEUTRAL` value (or the grid's first value) and the whole
    procedure rerun: ``delta`` is what tuning that constant buys on held-out queries. The
    joint cross-validation (:func:`cross_validate_sets`) of this one set: each fold's figures
    also carry its held-out ``objective``.
    """
    names = parse_objective(objective)
    joint, held = _cross_validate_sets({query_set: collected}, base, grid, names, k,
                                       baselines, ablate)
    res = joint.sets[query_set]
    for f, part in zip(res.folds, held[query_set], strict=True):
        f["objective"] = _mean_objective(part, names)
    res.ablation = [{k2: v for k2, v in a.items() if k2 != "per_set"} for a in joint.ablation]
    return res


# =============================================================================== several sets


@dataclass
class JointCVResult:
    """One set of constants for several query sets (one profile serves them all).

    Fold ``j`` holds out fold ``j`` of *every* set at once (LoCoMo's ``j``-th conversation,
    the ``j``-th hash fold of a BEIR set); the constants are chosen on the other folds by the
    mean over sets of each set's mean objective (every set weighs the same, whatever its size).
    ``sets`` holds each set's held-out figures, spread and baselines, as :class:`CVResult`.
    """

    objective: tuple[str, ...]
    grid: Mapping[str, Sequence[Any]]
    chosen: list[dict[str, Any]]
    chosen_all: dict[str, Any]
    sets: dict[str, CVResult]
    ablation: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"objective": "+".join(self.objective), "grid": self.grid,
                "chosen_per_fold": self.chosen, "chosen_on_all": self.chosen_all,
                "sets": {k: v.to_dict() for k, v in self.sets.items()},
                "ablation": self.ablation}

    def to_markdown(self) -> str:
        obj = "+".join(self.objective)
        lines = [f"### Cross-validation of {', '.join(self.sets)} (one profile for all)", "",
                 f"Constants chosen on the training folds of every set at once by the mean "
                 f"over sets of {obj}; grid {_grid_text(self.grid)}.", ""]
        lines += ["| fold | chosen on the other folds |", "| --- | --- |"]
        lines += [f"| {j + 1} | {_combo_text(c)} |" for j, c in enumerate(self.chosen)]
        lines += ["", f"Chosen on all folds: {_combo_text(self.chosen_all)}.", "",
                  "| set | run (held-out, pooled) | " + " | ".join(SHOWN) + " |",
                  "| --- | --- |" + " --- |" * len(SHOWN)]
        for name, r in self.sets.items():
            lines.append(f"| {name} ({r.n_queries} q) | **tuned by CV** | " + " | ".join(
                f"**{r.pooled[m]:.3f}** ± {r.spread[m]:.3f}" for m in SHOWN) + " |")
            for label, b in r.baselines.items():
                lines.append(f"| | {label} (fixed) | " + " | ".join(
                    f"{b['pooled'][m]:.3f}" for m in SHOWN) + " |")
        for name, r in self.sets.items():
            if r.by_category and len(r.by_category) > 1:
                lines += ["", f"{name}, held-out S@5 / R@5 by category: "
                          + _by_category_text(r.by_category)]
        if self.ablation:
            lines += ["", f"Ablation (held-out {obj}, mean over sets; the constant pinned to "
                      "its neutral value, the others still tuned):", "",
                      "| constant | neutral | with it | pinned | delta | per set | folds won / "
                      "lost | keep |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
            for a in self.ablation:
                per = ", ".join(f"{k} {v:+.4f}" for k, v in a["per_set"].items())
                lines.append(f"| {a['constant']} | {a['neutral']} | {a['with']:.4f} | "
                             f"{a['pinned']:.4f} | {a['delta']:+.4f} | {per} | "
                             f"{a['folds_won']} / {a['folds_lost']} | "
                             f"{'yes' if a['keep'] else 'no'} |")
        return "\n".join(lines) + "\n"


def _joint_run(tables: Mapping[str, _Table], folds: Mapping[str, list[Fold]],
               configs: Sequence[tuple[dict[str, Any], EvalConfig]], n_folds: int,
               names: Sequence[str], base: SearchSettings
               ) -> tuple[list[dict[str, Any]], dict[str, list[list[dict[str, Any]]]]]:
    """Per joint fold: the chosen combination; per set and fold: its held-out rows."""
    chosen = []
    held: dict[str, list[list[dict[str, Any]]]] = {k: [] for k in tables}
    for j in range(n_folds):
        best: tuple[float, float] | None = None
        pick = configs[0]
        for combo, cfg in configs:
            total = 0.0
            for name, table in tables.items():
                fs = folds[name]
                test = set(fs[j].test) if j < len(fs) else set()
                rows = table.rows_of(cfg)
                vals = [_objective(r, names) for i, r in enumerate(rows) if i not in test]
                total += sum(vals) / max(1, len(vals))
            key = (round(total / len(tables), 9), -_distance(combo, base))
            if best is None or key > best:
                best, pick = key, (combo, cfg)
        chosen.append(pick[0])
        for name, table in tables.items():
            fs = folds[name]
            rows = table.rows_of(pick[1])
            held[name].append([rows[i] for i in fs[j].test] if j < len(fs) else [])
    return chosen, held


def cross_validate_sets(sets: Mapping[str, Sequence[CollectedQuery]], base: SearchSettings,
                        grid: Mapping[str, Sequence[Any]] | None = None, *,
                        objective: str = "success@5+recall@5", k: int = 5,
                        baselines: Mapping[str, EvalConfig | SearchSettings] | None = None,
                        ablate: bool = True) -> JointCVResult:
    """:func:`cross_validate` for one profile over several query sets (see
    :class:`JointCVResult`). Only the main queries are scored (apart ones are left out)."""
    return _cross_validate_sets(sets, base, grid, parse_objective(objective), k, baselines,
                                ablate)[0]


def _set_result(name: str, table: _Table, folds: Sequence[Fold], chosen: Sequence[Any],
                held: Sequence[list[dict[str, Any]]], all_pick: dict[str, Any],
                all_cfg: EvalConfig, baselines: Mapping[str, EvalConfig | SearchSettings],
                grid: Mapping[str, Sequence[Any]], names: Sequence[str]) -> CVResult:
    """One set's held-out figures (per fold and pooled), its baselines and in-sample figures."""
    per_fold: list[dict[str, Any]] = [
        {"fold": f.name, "n": len(f.test), "chosen": chosen[j],
         "held_out": _figures(held[j]) if held[j] else dict.fromkeys(SHOWN, 0.0)}
        for j, f in enumerate(folds)]
    pooled_rows = [r for part in held for r in part]
    base_out: dict[str, dict[str, Any]] = {}
    for label, b in baselines.items():
        cfg = b if isinstance(b, EvalConfig) else EvalConfig(label, b)
        rows = table.rows_of(replace(cfg, label=f"baseline:{label}"))
        fold_figs = [_figures([rows[i] for i in f.test]) for f in folds if f.test]
        base_out[label] = {"pooled": _figures(rows), "spread": _spread(fold_figs),
                           "per_fold": fold_figs}
    pooled = _figures(pooled_rows) if pooled_rows else dict.fromkeys(SHOWN, 0.0)
    return CVResult(name, tuple(names), grid, per_fold, pooled,
                    _spread([f["held_out"] for f in per_fold]), base_out, all_pick,
                    _figures(table.rows_of(all_cfg)), [], len(table.collected),
                    _by_category(pooled_rows) if pooled_rows else {})


def _cross_validate_sets(sets: Mapping[str, Sequence[CollectedQuery]], base: SearchSettings,
                         grid: Mapping[str, Sequence[Any]] | None, names: Sequence[str],
                         k: int, baselines: Mapping[str, EvalConfig | SearchSettings] | None,
                         ablate: bool
                         ) -> tuple[JointCVResult, dict[str, list[list[dict[str, Any]]]]]:
    """:func:`cross_validate_sets`, and each set's held-out rows per fold."""
    grid = {k2: list(v) for k2, v in (grid or DEFAULT_CV_GRID).items()}
    mains = {n: [c for c in col if not c.query.apart] for n, col in sets.items()}
    tables = {n: _Table(col) for n, col in mains.items()}
    folds = {n: make_folds(col, k) for n, col in mains.items()}
    n_folds = max(len(f) for f in folds.values())
    configs = grid_configs(base, grid)
    chosen, held = _joint_run(tables, folds, configs, n_folds, names, base)
    all_pick = _joint_run(tables, {n: [Fold("none", ())] for n in tables}, configs, 1, names,
                          base)[0][0]
    all_cfg = next(cfg for combo, cfg in configs if combo == all_pick)
    results = {name: _set_result(name, tables[name], folds[name], chosen, held[name],
                                 all_pick, all_cfg, baselines or {}, grid, names)
               for name in mains}
    ablation = (_joint_ablation(tables, folds, grid, held, n_folds, names, base)
                if ablate else [])
    return JointCVResult(tuple(names), grid, chosen, all_pick, results, ablation), held


def _joint_ablation(tables: Mapping[str, _Table], folds: Mapping[str, list[Fold]],
                    grid: Mapping[str, Sequence[Any]],
                    held: Mapping[str, list[list[dict[str, Any]]]], n_folds: int,
                    names: Sequence[str], base: SearchSettings) -> list[dict[str, Any]]:
    """Each constant of the grid with more than one value pinned to its neutral value and the
    whole procedure rerun: what tuning it buys, on the mean over sets and per set."""

    def macro(h: Mapping[str, list[list[dict[str, Any]]]], j: int | None = None) -> float:
        vals = []
        for parts in h.values():
            rows = [r for p in parts for r in p] if j is None else (
                parts[j] if j < len(parts) else [])
            if rows:
                vals.append(_mean_objective(rows, names))
        return sum(vals) / max(1, len(vals))

    def per_set(h: Mapping[str, list[list[dict[str, Any]]]]) -> dict[str, float]:
        return {n: macro({n: parts}) for n, parts in h.items()}

    ref = macro(held)
    ref_sets = per_set(held)
    ablation = []
    for name, values in grid.items():
        if len(values) < 2:
            continue
        neutral = NEUTRAL.get(name, values[0])
        pinned = dict(grid)
        pinned[name] = [neutral]
        _, h2 = _joint_run(tables, folds, grid_configs(base, pinned), n_folds, names, base)
        won = sum(1 for j in range(n_folds) if macro(held, j) > macro(h2, j) + 1e-12)
        lost = sum(1 for j in range(n_folds) if macro(held, j) < macro(h2, j) - 1e-12)
        p = macro(h2)
        p_sets = per_set(h2)
        ablation.append({"constant": name, "neutral": neutral, "with": ref, "pinned": p,
                         "delta": ref - p,
                         "per_set": {n: ref_sets[n] - p_sets[n] for n in ref_sets},
                         "folds_won": won, "folds_lost": lost,
                         "keep": ref - p > 1e-9 and won >= lost})
    return ablation


def run_cv(index_or_workspace: MemoryIndex | str | os.PathLike[str] | None,
           query_set: QuerySet | str, base: SearchSettings,
           grid: Mapping[str, Sequence[Any]] | None = None, progress: Progress | None = None,
           *, objective: str = "success@5+recall@5", k: int = 5, profile: str | None = None,
           provider: str | None = None, limit: int | None = None,
           chunk_tokens: int | None = None, cache: bool = True, ablate: bool = True
           ) -> CVResult:
    """Fetch the candidates once (cached on disk), then :func:`cross_validate`.

    Baselines: ``base`` as configured (fixed) and each leg alone.
    """
    sets, baselines = _fetch_sets([query_set], base, grid, index_or_workspace, progress,
                                  profile=profile, provider=provider, limit=limit,
                                  chunk_tokens=chunk_tokens, cache=cache)
    name, collected = next(iter(sets.items()))
    return cross_validate(collected, base, grid, objective=objective, k=k, baselines=baselines,
                          ablate=ablate, query_set=name)


def run_cv_sets(query_sets: Sequence[QuerySet | str], base: SearchSettings,
                grid: Mapping[str, Sequence[Any]] | None = None,
                progress: Progress | None = None, *, objective: str = "success@5+recall@5",
                k: int = 5, profile: str | None = None, provider: str | None = None,
                limit: int | None = None, chunk_tokens: int | None = None, cache: bool = True
                ) -> JointCVResult:
    """Fetch each set's candidates once (cached), then :func:`cross_validate_sets`."""
    sets, baselines = _fetch_sets(query_sets, base, grid, None, progress, profile=profile,
                                  provider=provider, limit=limit, chunk_tokens=chunk_tokens,
                                  cache=cache)
    return cross_validate_sets(sets, base, grid, objective=objective, k=k, baselines=baselines)


def _fetch_sets(query_sets: Sequence[QuerySet | str], base: SearchSettings,
                grid: Mapping[str, Sequence[Any]] | None,
                index_or_workspace: MemoryIndex | str | os.PathLike[str] | None,
                progress: Progress | None, *, limit: int | None, **kw: Any
                ) -> tuple[dict[str, list[CollectedQuery]], dict[str, EvalConfig | SearchSettings]]:
    """Each set's candidates fetched once for every configuration the run scores (``base`` as
    configured, each leg alone, the combinations of the grid, default
    :data:`DEFAULT_CV_GRID`), and the fixed baselines among them."""
    leg_cfgs = leg_configs(base)
    configs = [EvalConfig("as configured", base), *leg_cfgs,
               *(cfg for _, cfg in grid_configs(base, grid or DEFAULT_CV_GRID))]
    baselines: dict[str, EvalConfig | SearchSettings] = {"as configured": base}
    baselines.update({c.label: c for c in leg_cfgs})
    sets: dict[str, list[CollectedQuery]] = {}
    for qs in query_sets:
        q = (load_query_set(qs) if isinstance(qs, str) else qs).limited(limit)
        sets[q.name], _ = collect(q, configs, index_or_workspace=index_or_workspace,
                                  progress=progress, **kw)
    return sets, baselines
