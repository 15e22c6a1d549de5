"""Search & tune without Streamlit: the tuned settings and their widgets, views of fusion
results (tables, A/B rank movement), and the OpenClaw export.

The ranking itself is :func:`memory_core.fuse`; this module only converts settings to and from
the page's widget values, lays fusion output out (which hits were returned, which the gate or the
cut removed, how ranks moved between two settings) and translates settings into OpenClaw's config
shape. Being free of Streamlit, all of it is testable and usable from notebooks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd

from memory_core import Candidates, FusionResult, Hit, SearchSettings, fuse, profile_settings
from memory_core.base.config import checked_settings, openclaw_keys, setting_meta
from memory_core.base.text import cjk_bigrams
from memory_core.read.query import STOP_WORDS, tokens

#: The SearchSettings fields the Search & tune page edits (the rest stay the profile's).
TUNABLE: tuple[str, ...] = (
    "max_results", "min_score", "vector_weight", "text_weight", "candidate_multiplier", "hybrid",
    "fusion", "rrf_k", "keyword_query", "cjk_bigrams", "drop_question_frame", "block_rescore",
    "keyword_only_fill", "mmr_enabled",
    "mmr_lambda", "decay_enabled", "half_life_days", "now_ms", "date_hint",
)
_SETTINGS_FIELDS = frozenset(f.name for f in fields(SearchSettings))
assert set(TUNABLE) <= _SETTINGS_FIELDS, set(TUNABLE) - _SETTINGS_FIELDS

# --------------------------------------------------------------------------- settings ↔ widgets


def apply_values(base: SearchSettings, values: Mapping[str, Any]) -> SearchSettings:
    """``base`` with the known fields of ``values`` replaced, each checked by its declaration
    (:func:`checked_settings`, as every door checks it); ``now_ms=None`` unpins "now"."""
    known = {k: v for k, v in values.items() if k in _SETTINGS_FIELDS}
    s = checked_settings(base, "workbench", **known)
    return replace(s, now_ms=None) if "now_ms" in known and known["now_ms"] is None else s


def slider_range(field: str) -> dict[str, Any]:
    """``st.slider``'s bounds and step for ``field``, from the setting's declaration."""
    lo, hi, step = setting_meta(SearchSettings, field)["slider"]
    return {"min_value": lo, "max_value": hi, "step": step}


def settings_values(s: SearchSettings) -> dict[str, Any]:
    """The tunable fields of ``s`` as a plain dict."""
    d = asdict(s)
    return {k: d[k] for k in TUNABLE}


def to_widget(field: str, value: Any) -> Any:
    """A setting's value as its widget holds it (the pinned "now" is a date picker)."""
    if field == "now_ms":
        return None if value is None else datetime.fromtimestamp(value / 1000, UTC).date()
    return value


def from_widget(field: str, value: Any) -> Any:
    """A widget's value as the setting it edits (a picked date is noon UTC that day, in ms)."""
    if field == "now_ms":
        return (int(datetime(value.year, value.month, value.day, 12, tzinfo=UTC).timestamp()
                    * 1000) if isinstance(value, date) else None)
    return value


def widget_values(values: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``{prefix + field: widget value}`` for the tunable ``values`` (to load the widgets)."""
    return {prefix + k: to_widget(k, v) for k, v in values.items() if k in TUNABLE}


def settings_from_widgets(base: SearchSettings, widgets: Mapping[str, Any], prefix: str,
                          fallback: Mapping[str, Any]) -> SearchSettings:
    """``base`` with every tunable field read from ``widgets[prefix + field]``.

    A widget that was not drawn on the last run (MMR λ while MMR is off) has no value: the
    field keeps ``fallback``'s.
    """
    values = {f: from_widget(f, widgets[prefix + f]) if prefix + f in widgets else fallback[f]
              for f in TUNABLE}
    return apply_values(base, values)


def settings_diff(a: SearchSettings, b: SearchSettings) -> dict[str, tuple[Any, Any]]:
    """The tunable fields on which ``a`` and ``b`` differ: ``{field: (a's, b's)}``."""
    return {k: (getattr(a, k), getattr(b, k)) for k in TUNABLE
            if getattr(a, k) != getattr(b, k)}


#: Status labels of a hit in the results table.
RETURNED = "returned"
GATED = "below minScore"
CUT = "past maxResults"
ABSTAINED = "abstained"
#: :attr:`Hit.removed_by` (the fusion step that removed a hit) → its label.
REMOVED_LABELS = {"gate": GATED, "maxResults": CUT, "abstention": ABSTAINED}


def hit_status(hit: Hit) -> str:
    """Why a hit is (not) in the results, as fusion recorded it (:attr:`Hit.removed_by`):
    returned, gated by minScore, cut by maxResults, or the whole search abstained."""
    if hit.passed:
        return RETURNED
    return REMOVED_LABELS.get(hit.removed_by, hit.removed_by or CUT)


def removed_counts(result: FusionResult) -> dict[str, int]:
    """How many hits each removal step left out (:func:`hit_status`'s labels), as fusion
    recorded them: the page's metrics read these, not the scores."""
    counts = dict.fromkeys((GATED, CUT, ABSTAINED), 0)
    for h in result.below_gate:
        label = hit_status(h)
        counts[label] = counts.get(label, 0) + 1
    return counts


def hits_frame(result: FusionResult, *, cut_limit: int) -> pd.DataFrame:
    """One row per hit: the returned ones, then up to ``cut_limit`` of the removed ones.

    Columns: rank (blank for removed hits), status, score, vectorScore, textScore, the rank in
    each leg, which leg(s) found it, the decay multiplier, citation, snippet, id.
    """
    rows: list[dict[str, Any]] = []
    for i, h in enumerate([*result.hits, *result.below_gate[:cut_limit]]):
        rows.append({
            "rank": i + 1 if h.passed else None,
            "status": hit_status(h),
            "score": round(h.score, 4),
            "vectorScore": round(h.vector_score, 4),
            "textScore": round(h.text_score, 4),
            "vector rank": h.vector_rank,
            "text rank": h.text_rank,
            "via": h.via,
            "decay": round(h.decay, 3),
            "citation": h.citation,
            "snippet": " ".join(h.snippet.split())[:160],
            "id": h.id,
        })
    cols = ["rank", "status", "citation", "score", "vectorScore", "textScore", "vector rank",
            "text rank", "via", "decay", "snippet", "id"]
    return pd.DataFrame(rows, columns=cols).astype(
        {"rank": "Int64", "vector rank": "Int64", "text rank": "Int64"})


def tail(text: str, width: int = 22) -> str:
    """``text`` cut from the left to ``width`` characters, "…" first: a narrow column of
    citations at 1440 px shows each one's file name and line range (issue #35)."""
    return text if len(text) <= width else "…" + text[1 - width:]


def grey_removed(df: pd.DataFrame) -> Any:
    """A pandas Styler that greys the rows of hits the gate or the cut removed."""

    def style(row: pd.Series) -> list[str]:
        if row["status"] == RETURNED:
            return [""] * len(row)
        return ["color: #9aa0a6; background-color: #f4f4f5; font-style: italic"] * len(row)

    shown = blank_ranks(df, ["rank", "vector rank", "text rank"])
    return shown.style.apply(style, axis=1).format(
        {"score": "{:.3f}", "vectorScore": "{:.3f}", "textScore": "{:.3f}", "decay": "{:.3f}"})


def blank_ranks(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """A copy with the rank ``columns`` as text, "–" where there is none (Streamlit would
    print "None")."""
    out = df.copy()
    for c in columns:
        out[c] = [("–" if pd.isna(v) else str(int(v))) for v in out[c]]
    return out


# --------------------------------------------------------------------------- reading the results


def query_terms(query: str) -> list[str]:
    """The words of ``query`` to mark in snippets: its tokens without stop words (unless
    nothing else is left), and each Chinese/Japanese/Korean run's bigrams too (the keyword leg
    matches those inside sentences)."""
    toks = list(dict.fromkeys(t.lower() for t in tokens(query)))
    kept = [t for t in toks if t not in STOP_WORDS and (len(t) > 1 or not t.isascii())]
    out = list(kept or toks)
    for t in kept or toks:
        out.extend(b for b in tokens(cjk_bigrams(t)) if b != t and b not in out)
    return out


#: The weight sliders and their labels.
WEIGHTS = {"vector_weight": "vectorWeight", "text_weight": "textWeight"}


def _ranking(r: FusionResult) -> list[tuple[str, float, bool]]:
    return [(h.id, round(h.score, 9), h.passed) for h in [*r.hits, *r.below_gate]]


def weight_notes(cands: Candidates, settings: SearchSettings) -> dict[str, str]:
    """``{field: one line}`` for each weight slider that changes nothing for this query, saying
    why (``{}`` when both matter).

    Whether a weight matters is measured, not guessed: the candidates are fused with the weight
    low and high (everything else as set); when no score and no rank moves, the slider is inert
    and the reason is the leg that is missing (a keyword-only index, an empty leg, Hybrid off).
    """
    notes: dict[str, str] = {}
    for field, label in WEIGHTS.items():
        weighted: list[dict[str, Any]] = [{field: w} for w in (0.1, 0.9)]
        lo, hi = (fuse(cands, replace(settings, **w)) for w in weighted)
        if _ranking(lo) != _ranking(hi):
            continue
        notes[field] = f"{label} has no effect here: {_inert_reason(cands, settings)}."
    return notes


def _inert_reason(cands: Candidates, s: SearchSettings) -> str:
    wv, wt = s.weights_for(cands.query)
    if s.fusion == "normalized" and (wv, wt) != s.normalized_weights():
        return (f"the query is written mostly in Chinese/Japanese/Korean, so it is weighed "
                f"{wv:.2f} / {wt:.2f} by cjk_vector_weight (the local model reads no CJK; "
                f"set it with `--set cjk_vector_weight=…` or in the TOML)")
    if cands.mode == "fts-only":
        return ("the index is keyword-only (no embedding provider), and OpenClaw's FTS-only "
                "ranking weighs nothing" if s.fusion == "reference" else
                "the index is keyword-only (no embedding provider): only the keyword leg ranks")
    if cands.mode == "vector-only":
        return "the keyword leg is unavailable (no FTS5): only the vector leg ranks"
    if not s.hybrid:
        return "Hybrid is off: only the vector leg ranks"
    if not cands.vector:
        return "the vector leg found no candidate for this query: only the keyword leg ranks"
    if not cands.keyword:
        return ("the keyword leg found nothing for this query"
                + (" (the `and` query needs every term in one chunk)"
                   if s.keyword_query == "and" else "") + ": only the vector leg ranks")
    return "moving it changes no score or rank of these candidates"


def empty_reason(cands: Candidates, result: FusionResult) -> str:
    """Why ``result`` returned no hit, in one line ("" when it returned some)."""
    if result.hits:
        return ""
    s = result.settings
    if not cands.vector and not cands.keyword:
        why = "neither leg found a candidate for this query"
        if cands.mode == "fts-only":
            why += " (a keyword-only index"
            why += ", and the `and` query needs every term in one chunk)" if (
                s.keyword_query == "and") else ")"
        elif s.keyword_query == "and":
            why += " (the `and` keyword query needs every term in one chunk)"
        return why
    scored = list(result.below_gate)
    if not scored:
        return "no candidate entered the fusion (every leg it uses is empty under these settings)"
    best = max(h.score for h in scored)
    if best < s.min_score:
        return (f"all {len(scored)} candidates score below minScore {s.min_score:.2f} (the best "
                f"scores {best:.3f})")
    return f"no candidate passed (maxResults {s.max_results})"


def settings_line(s: SearchSettings) -> str:
    """The settings a fusion ran with, in one line (under the metrics)."""
    parts = [f"vectorWeight {s.vector_weight:.2f}", f"textWeight {s.text_weight:.2f}",
             f"minScore {s.min_score:.2f}", f"maxResults {s.max_results}",
             f"fusion {s.fusion}"]
    if not s.hybrid:
        parts.append("hybrid off")
    if s.mmr_enabled:
        parts.append(f"MMR λ {s.mmr_lambda:.2f}")
    if s.decay_enabled:
        parts.append(f"decay {s.half_life_days:g} d")
    return " · ".join(parts)


# --------------------------------------------------------------------------- A/B


@dataclass
class Movement:
    """How the returned hits of B differ from A's: per-hit rows and counts."""

    rows: pd.DataFrame
    moved: int
    new: int
    dropped: int
    same: int

    def summary(self) -> str:
        return (f"{self.moved} moved, {self.new} new in B, {self.dropped} dropped from A, "
                f"{self.same} unchanged")


def movement_label(rank_a: int | None, rank_b: int | None) -> str:
    """``↑2`` (B ranks it two places higher), ``↓1``, ``=``, ``new`` or ``dropped``."""
    if rank_a is None:
        return "new"
    if rank_b is None:
        return "dropped"
    if rank_a == rank_b:
        return "="
    return f"↑{rank_a - rank_b}" if rank_b < rank_a else f"↓{rank_b - rank_a}"


def rank_movement(a: FusionResult, b: FusionResult) -> Movement:
    """Compare the returned hits of two fusions of the same candidates (matched by chunk id)."""
    ra = {h.id: i + 1 for i, h in enumerate(a.hits)}
    rb = {h.id: i + 1 for i, h in enumerate(b.hits)}
    by_id = {h.id: h for h in [*a.hits, *b.hits]}
    order = [h.id for h in b.hits] + [h.id for h in a.hits if h.id not in rb]
    labels = [movement_label(ra.get(cid), rb.get(cid)) for cid in order]
    df = pd.DataFrame({"rank B": pd.array([rb.get(c) for c in order], dtype="Int64"),
                       "rank A": pd.array([ra.get(c) for c in order], dtype="Int64"),
                       "movement": labels,
                       "citation": [by_id[c].citation for c in order],
                       "snippet": [" ".join(by_id[c].snippet.split())[:120] for c in order]})
    return Movement(df, sum(x[0] in "↑↓" for x in labels), labels.count("new"),
                    labels.count("dropped"), labels.count("="))


# --------------------------------------------------------------------------- export


def openclaw_query_block(s: SearchSettings) -> dict[str, Any]:
    """The ``memorySearch.query`` block of OpenClaw's config (spec §4.1) for ``s``: each setting
    at the key it declares (:func:`memory_core.base.config.openclaw_keys`)."""
    block: dict[str, Any] = {}
    for name, keys in openclaw_keys(SearchSettings).items():
        value, node = getattr(s, name), block
        for key in keys[1:-1]:  # under ``query``
            node = node.setdefault(key, {})
        node[keys[-1]] = round(float(value), 4) if type(value) is float else value
    return block


def openclaw_export_json(s: SearchSettings) -> str:
    """``{"memorySearch": {"query": ...}}`` as JSON: paste under ``agents.defaults`` (or one
    agent)."""
    return json.dumps({"memorySearch": {"query": openclaw_query_block(s)}}, indent=2) + "\n"


def not_carried(s: SearchSettings) -> list[str]:
    """Settings that differ from OpenClaw's behaviour and that its config cannot express."""
    ref = profile_settings("reference")
    out = []
    if s.fusion != ref.fusion:
        out.append(f"fusion={s.fusion}" + (f" (rrf_k={s.rrf_k})" if s.fusion == "rrf" else ""))
    if s.keyword_query != ref.keyword_query:
        out.append(f"keyword_query={s.keyword_query}")
    if s.cjk_bigrams != ref.cjk_bigrams:
        out.append("cjk_bigrams")
    if s.drop_question_frame != ref.drop_question_frame:
        out.append("drop_question_frame")
    if s.block_rescore != ref.block_rescore:
        out.append(f"block_rescore={s.block_rescore}")
    if s.keyword_only_fill != ref.keyword_only_fill:
        out.append("keyword_only_fill (OpenClaw 2026.9 behaviour)")
    if s.relaxed_min_score != ref.relaxed_min_score:
        out.append(f"relaxed_min_score={s.relaxed_min_score}")
    if s.date_hint != ref.date_hint:
        out.append(f"date_hint={s.date_hint}")
    if s.now_ms is not None:
        out.append("pinned 'now' for decay and relative dates")
    return out


#: The example queries the pages suggest, each with the profiles it answers in on the demo
#: `make run` opens (tests/test_app_numbers.py checks every one): the reference's keyword leg
#: reads a Chinese run as one token and its minScore gates MiniLM's paraphrases, so a query
#: only the default profile answers says so.
EXAMPLE_QUERIES: dict[str, tuple[str, ...]] = {
    "who is on call?": ("reference", "default"),
    "PG_DEADLOCK_40P01": ("reference", "default"),
    "invoice": ("reference", "default"),
    "数据库连接池": ("default",),
}


def example_queries(quote: str = "") -> list[str]:
    """The example queries (each in ``quote``), those one profile answers marked with it."""
    return [f"{quote}{q}{quote}" + ("" if len(p) > 1 else f" ({p[0]} profile)")
            for q, p in EXAMPLE_QUERIES.items()]
