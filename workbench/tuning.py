"""Views of fusion results for Search & tune: tables, A/B rank movement, OpenClaw export.

The ranking itself is :func:`memory_core.fuse`; this module only lays its output out (which hits
were returned, which the gate or the cut removed, how ranks moved between two settings) and
translates settings into OpenClaw's config shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from memory_core import FusionResult, Hit, SearchSettings, profile_settings

#: Status labels of a hit in the results table.
RETURNED = "returned"
GATED = "below minScore"
CUT = "past maxResults"


def hit_status(hit: Hit, settings: SearchSettings) -> str:
    """Why a hit is (not) in the results: returned, gated by minScore, or cut by maxResults."""
    if hit.passed:
        return RETURNED
    return GATED if hit.score < settings.min_score else CUT


def _fmt_rank(r: int | None) -> str:
    return "–" if r is None else str(r)


def hits_frame(result: FusionResult, *, cut_limit: int | None = 20) -> pd.DataFrame:
    """One row per hit: the returned ones, then up to ``cut_limit`` of the removed ones.

    Columns: rank (blank for removed hits), status, score, vectorScore, textScore, the rank in
    each leg, which leg(s) found it, the decay multiplier, citation, snippet, id.
    """
    s = result.settings
    rows: list[dict[str, Any]] = []
    shown = list(result.hits) + list(result.below_gate[: cut_limit if cut_limit is not None
                                                        else None])
    for i, h in enumerate(shown):
        rows.append({
            "rank": i + 1 if h.passed else None,
            "status": hit_status(h, s),
            "score": round(h.score, 4),
            "vectorScore": round(h.vector_score, 4),
            "textScore": round(h.text_score, 4),
            "vector rank": _fmt_rank(h.vector_rank),
            "text rank": _fmt_rank(h.text_rank),
            "via": h.via,
            "decay": round(h.decay, 3),
            "citation": h.citation,
            "snippet": " ".join(h.snippet.split())[:160],
            "id": h.id,
        })
    cols = ["rank", "status", "citation", "score", "vectorScore", "textScore", "vector rank",
            "text rank", "via", "decay", "snippet", "id"]
    df = pd.DataFrame(rows, columns=cols)
    df["rank"] = df["rank"].astype("Int64")
    return df


def grey_removed(df: pd.DataFrame) -> Any:
    """A pandas Styler that greys the rows of hits the gate or the cut removed."""

    def style(row: pd.Series) -> list[str]:
        if row["status"] == RETURNED:
            return [""] * len(row)
        return ["color: #9aa0a6; background-color: #f4f4f5; font-style: italic"] * len(row)

    shown = blank_ranks(df, ["rank"])
    return shown.style.apply(style, axis=1).format(
        {"score": "{:.3f}", "vectorScore": "{:.3f}", "textScore": "{:.3f}", "decay": "{:.3f}"})


def blank_ranks(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """A copy with the rank ``columns`` as text, "–" where there is none (Streamlit would
    print "None")."""
    out = df.copy()
    for c in columns:
        out[c] = [("–" if pd.isna(v) else str(int(v))) for v in out[c]]
    return out


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
    if rank_a is None and rank_b is None:
        return ""
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
    rows = []
    counts = {"moved": 0, "new": 0, "dropped": 0, "same": 0}
    for cid in order:
        h = by_id[cid]
        label = movement_label(ra.get(cid), rb.get(cid))
        kind = ("same" if label == "=" else "new" if label == "new" else
                "dropped" if label == "dropped" else "moved")
        counts[kind] += 1
        rows.append({"rank B": rb.get(cid), "rank A": ra.get(cid), "movement": label,
                     "citation": h.citation, "snippet": " ".join(h.snippet.split())[:120]})
    df = pd.DataFrame(rows, columns=["rank B", "rank A", "movement", "citation", "snippet"])
    df["rank A"] = df["rank A"].astype("Int64")
    df["rank B"] = df["rank B"].astype("Int64")
    return Movement(df, counts["moved"], counts["new"], counts["dropped"], counts["same"])


# --------------------------------------------------------------------------- export


def openclaw_query_block(s: SearchSettings) -> dict[str, Any]:
    """The ``memorySearch.query`` block of OpenClaw's config (spec §4.1) for ``s``."""
    return {
        "maxResults": int(s.max_results),
        "minScore": round(float(s.min_score), 4),
        "hybrid": {
            "enabled": bool(s.hybrid),
            "vectorWeight": round(float(s.vector_weight), 4),
            "textWeight": round(float(s.text_weight), 4),
            "candidateMultiplier": int(s.candidate_multiplier),
            "mmr": {"enabled": bool(s.mmr_enabled), "lambda": round(float(s.mmr_lambda), 4)},
            "temporalDecay": {"enabled": bool(s.decay_enabled),
                              "halfLifeDays": float(s.half_life_days)},
        },
    }


def openclaw_export(s: SearchSettings) -> dict[str, Any]:
    """``{"memorySearch": {"query": ...}}``: paste under ``agents.defaults`` (or one agent)."""
    return {"memorySearch": {"query": openclaw_query_block(s)}}


def openclaw_export_json(s: SearchSettings) -> str:
    return json.dumps(openclaw_export(s), indent=2) + "\n"


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
    if s.keyword_only_fill != ref.keyword_only_fill:
        out.append("keyword_only_fill (OpenClaw 2026.9 behaviour)")
    if s.relaxed_min_score != ref.relaxed_min_score:
        out.append(f"relaxed_min_score={s.relaxed_min_score}")
    if getattr(s, "date_hint", 0.0) != getattr(ref, "date_hint", 0.0):
        out.append(f"date_hint={s.date_hint}")
    if s.now_ms is not None:
        out.append("pinned 'now' for decay")
    return out
