"""The Evaluate page's saved runs and the labels of Search & tune: tables and actions over
:mod:`memory_core.evaluation.runs` and :mod:`memory_core.evaluation.labels` (no ranking here)."""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
import streamlit as st

from memory_core.evaluation.labels import LabelStore, labels_dir
from memory_core.evaluation.run_compare import Comparison
from memory_core.evaluation.runs import SavedRun, compare_saved, side_by_side

from . import state

#: The three choices of a hit's label in Search & tune.
LABEL_CHOICES = ("—", "relevant", "not relevant")
#: Search & tune's widget-key prefix and the key that tells it to reload its widgets.
_SEARCH_SCOPE_KEY = "t__profile"


def label_store(key: state.IndexKey) -> LabelStore:
    """The labels of the open workspace: ``labels/`` beside its index file."""
    return LabelStore(labels_dir(state.open_index(key).store_path))


def label_key(query: str, docid: str) -> str:
    """The widget key of one hit's label for one query (a hit keeps no label across queries)."""
    return f"lbl_{hashlib.sha1(query.encode()).hexdigest()[:8]}_{docid}"


def label_of(judged: dict[str, int], docid: str) -> str:
    """The label choice a stored judgement shows as."""
    if docid not in judged:
        return LABEL_CHOICES[0]
    return LABEL_CHOICES[1] if judged[docid] > 0 else LABEL_CHOICES[2]


def save_labels(key: state.IndexKey, query: str, choices: dict[str, str]) -> int:
    """Store the choices (docid → label) of one query; returns how many hits are judged."""
    store = label_store(key)
    for docid, choice in choices.items():
        store.mark(query, docid, None if choice == LABEL_CHOICES[0]
                   else choice == LABEL_CHOICES[1])
    return len(store.judgements(query))


def apply_cell(key: state.IndexKey, values: dict[str, Any]) -> None:
    """Make a sweep cell's values the tuned settings; Search & tune reloads its widgets."""
    tuned = state.tuned_values(key) or {}
    tuned.update(values)
    if "vector_weight" in values and "text_weight" not in values:
        tuned["text_weight"] = round(1.0 - float(values["vector_weight"]), 6)
    state.set_tuned_values(key, tuned)
    st.session_state.pop(_SEARCH_SCOPE_KEY, None)


def _metric_row(v: dict[str, Any], b: str, who: str) -> dict[str, Any]:
    """One metric of a comparison: A, B (its column named ``b``), delta, the 95 % interval, the
    p-value, and B's wins and losses (their columns prefixed with ``who``)."""
    return {"A": v["a"], b: v["b"], "delta": v["delta"], "ci low": v["ci"][0],
            "ci high": v["ci"][1], "p-value": v["p_value"], f"{who}wins": v["wins"],
            f"{who}losses": v["losses"]}


def comparison_frame(cmp: Comparison) -> pd.DataFrame:
    """Per metric: A, B, delta, the 95 % interval, the p-value, wins and losses of B."""
    return pd.DataFrame([{"metric": m, **_metric_row(v, "B", "B ")}
                         for m, v in cmp.metrics.items()])


def outcome_options(cmp: Comparison, limit: int = 50) -> dict[str, str]:
    """``label → qid`` of the losses, then the wins (biggest first), for a picker."""
    out: dict[str, str] = {}
    for tag, rows in (("loss", cmp.losses()), ("win", cmp.wins())):
        for r in sorted(rows, key=lambda r: -abs(r["delta"]))[:limit]:
            out[f"{tag} · {r['qid']} · {str(r.get('query', ''))[:60]} ({r['delta']:+.3f})"] = \
                r["qid"]
    return out


def side_frames(a: SavedRun, b: SavedRun, qid: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both hit lists of one query, gold hits marked ★."""
    rows = side_by_side(a, b, qid)
    frames = []
    for tag in ("A", "B"):
        frames.append(pd.DataFrame([
            {"rank": r["rank"], "gold": "★" if r[f"{tag} gold"] else "",
             "hit": r[f"{tag} hit"], "score": r[f"{tag} score"]}
            for r in rows if r[f"{tag} hit"]], columns=["rank", "gold", "hit", "score"]))
    return frames[0], frames[1]


#: Short headers for the metric table, so that every column is in view at 1440 px with the
#: sidebar open (about 940 px of page): "recall@10" and "success@10" as headers need twice the
#: width of their figures. The full name is each column's tooltip.
_SHORT = {"recall": "R", "success": "S", "mrr": "MRR", "ndcg": "nDCG"}
METRIC_COLUMN_WIDTH = 58
RUN_COLUMN_WIDTH = 190


def metric_columns(metrics: list[str]) -> dict[str, Any]:
    """``column_config`` for Evaluate's metric table: the run, the metrics and zero results to
    three decimals, p50 in whole ms (formats of the browser's grid: a pandas Styler cost more
    than the rest of a level click, issue #35)."""
    cfg: dict[str, Any] = {"_index": st.column_config.TextColumn("run", width=RUN_COLUMN_WIDTH)}
    for m in metrics:
        name, _, k = m.partition("@")
        cfg[m] = st.column_config.NumberColumn(f"{_SHORT.get(name, name)}@{k}", format="%.3f",
                                               width=METRIC_COLUMN_WIDTH, help=m)
    cfg["zero results"] = st.column_config.NumberColumn(
        "zero", format="%.3f", width=METRIC_COLUMN_WIDTH, help="share of queries with no result")
    cfg["p50 ms"] = st.column_config.NumberColumn("p50 ms", format="%.0f",
                                                  width=METRIC_COLUMN_WIDTH,
                                                  help="median search time per query")
    return cfg


def best_cells(rows: list[dict[str, Any]], metric: str, current: tuple[float, float]
               ) -> tuple[dict[str, Any], int]:
    """The sweep's best cell for ``metric`` and how many cells tie with it.

    A whole row or column often ties (the keyword leg alone decides every weight below some
    value): the first maximum would then be a tie-break artefact of the grid's order. Among the
    tied cells the one nearest the ``current`` (vector weight, minScore) is chosen, so that
    "Apply" changes nothing when the current settings are already among the best.
    """
    top = max(float(r[metric]) for r in rows)
    tied = [r for r in rows if abs(float(r[metric]) - top) <= 1e-9]
    vw, ms = current
    best = min(tied, key=lambda r: (abs(float(r["vector_weight"]) - vw)
                                    + abs(float(r["min_score"]) - ms)))
    return best, len(tied)


def mismatch_notes(a: SavedRun, b: SavedRun) -> list[str]:
    """What differs between two saved runs besides their settings: the query set, its level,
    the index each searched. A comparison across them measures those too, so the page says so
    (two runs of different indexes were set side by side without a word)."""
    ma, mb = a.meta, b.meta
    notes = []
    if ma.get("query_set") != mb.get("query_set"):
        notes.append(f"different query sets: A `{ma.get('query_set')}`, B "
                     f"`{mb.get('query_set')}` (only the queries they share are compared)")
    if ma.get("level") != mb.get("level"):
        notes.append(f"judged at different levels: A {ma.get('level')}, B {mb.get('level')}")
    ia, ib = ma.get("index") or {}, mb.get("index") or {}
    if ia and ib and ia != ib:
        notes.append("different indexes (chunking, provider or content differ): the "
                     "difference measures the index as well as the settings")
    return notes


def holm(p_values: list[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input's order: with several runs tested
    against one baseline, the chance that one of them looks better by luck grows with their
    number; Holm's step-down keeps the family-wise error at the level read (as ranx does)."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def compare_many(baseline: SavedRun, others: list[SavedRun], metric: str = "ndcg@10",
                 rounds: int = 2000) -> pd.DataFrame:
    """Each of ``others`` against ``baseline`` on ``metric``: delta, the 95 % interval, the raw
    p-value and the Holm-adjusted one over the family (one row per run)."""
    rows = [{"run": run.name, "id": run.id, **_metric_row(
        compare_saved(baseline, run, rounds=rounds).metrics[metric], "run's", "")}
        for run in others]
    adjusted = holm([r["p-value"] for r in rows])
    for r, adj in zip(rows, adjusted, strict=True):
        r["p (Holm)"] = adj
    return pd.DataFrame(rows)
