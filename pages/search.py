"""Search & tune: one query, live sliders, the gate at work, score composition, A/B, export.

Both legs' candidates are fetched once per query (``MemoryIndex.candidates``) and cached in the
session; a slider change only re-fuses them with ``MemoryIndex.fuse`` (no embedding, no SQL),
and reruns only the sliders and the results (one ``st.fragment``; the views are
``workbench.search_view``).
"""

from __future__ import annotations

import time
from typing import Any, get_args

import streamlit as st

from memory_core import SearchSettings
from memory_core.base.config import FusionMode, KeywordQueryMode
from workbench import search_view, state, tuning

key = state.current_key()
idx = state.open_index(key)
st.title("Search & tune")
state.index_caption(key)
st.caption(f"{key.label()} — candidates are fetched once per query; sliders only re-fuse them.")

# ----------------------------------------------------------------------------- settings widgets

W = "t_"  # widget-key prefix of the tuning controls
FUSIONS = list(get_args(FusionMode))


def _load_widgets(values: dict[str, Any], *, only_missing: bool = False) -> None:
    for wk, v in tuning.widget_values(values, W).items():
        if not only_missing or wk not in st.session_state:
            st.session_state[wk] = v


def _reset() -> None:
    state.clear_tuned_values(key)
    _load_widgets(tuning.settings_values(idx.settings()))


def _pin_b() -> None:
    st.session_state["wb_pinned_b"] = state.tuned_values(key)


tuned = tuning.settings_values(state.tuned_settings(key))
if st.session_state.get(W + "_profile") != state.tuning_scope(key):  # profile or provider
    _load_widgets(tuned)
    st.session_state[W + "_profile"] = state.tuning_scope(key)
else:  # widgets not drawn last run (e.g. MMR λ while MMR was off) lost their state
    _load_widgets(tuned, only_missing=True)

backend_kind = st.radio(
    "Backend", ["builtin", "qmd"], key="search_backend", horizontal=True,
    help="builtin: this engine. qmd: the external qmd CLI (BM25 by default) behind the same "
         "face, falling back to builtin with the reason when it cannot answer (docs/qmd.md).")
off = backend_kind == "qmd"  # qmd ranks with its own scores: the fusion controls do not apply
OFF_WHY = "Does not apply to qmd, which ranks with its own scores (builtin fusion setting)."
query = st.text_input("Query", value=state.shared_query(), key="search_query",
                      placeholder="e.g. " + "  ·  ".join(tuning.example_queries()))
state.set_shared_query(query)


def _fusion(field: str, help: str | None = None) -> dict[str, Any]:
    """A builtin fusion control's widget key, help and state: under qmd, disabled, saying why."""
    return {"key": W + field, "disabled": off, "help": OFF_WHY if off else help}


def _weight_controls() -> Any:
    """The weights, the gate and the fusion controls; returns the slot under the weights
    where the results say why a weight does nothing for this query."""
    st.markdown("**Weights and gate**")
    if off:
        st.caption("qmd ranks by its own scores (BM25 over whole documents in `search` "
                   "mode): only minScore, maxResults (at most `[qmd] max_results`, 4) and "
                   "the sources apply; the other controls tune the builtin fusion and are "
                   "disabled.")
    st.slider("vectorWeight", **tuning.slider_range("vector_weight"), **_fusion(
        "vector_weight", "Clamped to 0..1, then divided by the sum of both weights."))
    st.slider("textWeight", **tuning.slider_range("text_weight"), **_fusion("text_weight"))
    weight_note = st.empty()  # why a weight does nothing for this query (search_view)
    st.slider("minScore", **tuning.slider_range("min_score"), key=W + "min_score",
              help="Hits scoring below stay visible, greyed.")
    mr_range = tuning.slider_range("max_results")
    if off:  # qmd returns at most [qmd] max_results: the slider offers no more than that
        mr_range["max_value"] = q_max = int(idx.config.qmd.max_results)
        if int(st.session_state.get(W + "max_results", 1)) > q_max:
            st.session_state[W + "max_results"] = q_max
    st.slider("maxResults", **mr_range, key=W + "max_results",
              help=f"qmd returns at most `[qmd] max_results` = {q_max}." if off else None)
    st.slider("candidateMultiplier", **tuning.slider_range("candidate_multiplier"), **_fusion(
        "candidate_multiplier", "Each leg contributes its top maxResults × "
        "candidateMultiplier (≤ 200)."))
    st.selectbox("Fusion", FUSIONS, **_fusion(
        "fusion", "reference: OpenClaw's weighted sum of leg scores; rrf: weighted reciprocal "
        "rank; normalized: BM25 divided by the query's best."))
    if st.session_state[W + "fusion"] == "rrf":
        st.slider("RRF k", **tuning.slider_range("rrf_k"), key=W + "rrf_k", disabled=off)
    st.toggle("Hybrid (both legs)", **_fusion("hybrid"))
    return weight_note


def _diversity_controls() -> None:
    """MMR, temporal decay and the date hint: the steps after fusion, each with its own
    setting shown only when it is on."""
    st.markdown("**Diversity and recency**")
    st.toggle("MMR", **_fusion("mmr_enabled"))
    if st.session_state[W + "mmr_enabled"]:
        st.slider("MMR λ", **tuning.slider_range("mmr_lambda"), key=W + "mmr_lambda",
                  disabled=off, help="1 = relevance only, 0 = diversity only.")
    st.toggle("Temporal decay", **_fusion("decay_enabled"))
    if st.session_state[W + "decay_enabled"]:
        st.slider("Half-life (days)", **tuning.slider_range("half_life_days"),
                  key=W + "half_life_days", disabled=off)
        st.date_input("'Now' for decay", key=W + "now_ms", disabled=off,
                      help="Empty: the clock. Pin a date to replay a past moment.")
    st.slider("Date hint", **tuning.slider_range("date_hint"), **_fusion(
        "date_hint", "Bonus for diaries of a date the query names (“on 7 May 2023”), fading "
        "with distance; 0 = off, as in the reference."))


def _keyword_query_controls() -> None:
    """The keyword query's settings, apart: changing them re-fetches the candidates rather
    than re-fusing the cached ones."""
    with st.expander("Keyword query (refetches)"):
        st.radio("Terms", list(get_args(KeywordQueryMode)), horizontal=True, **_fusion(
            "keyword_query", "and: OpenClaw's query (every term); or: any term, BM25-ranked."))
        st.toggle("CJK bigrams", **_fusion(
            "cjk_bigrams", "Search Chinese/Japanese/Korean text by character pairs."))
        st.toggle("Leave the question's frame out", **_fusion(
            "drop_question_frame", "or only: 'how many', 'days ago', 'any tips' leave the "
            "keyword query (notes rarely share them with the answer)."))
        st.toggle("Keyword-only hits fill free slots", **_fusion("keyword_only_fill"))
    with st.expander("Vector leg (refetches)"):
        st.slider("Best-block score: first N vector hits", **tuning.slider_range("block_rescore"),
                  **_fusion("block_rescore", "Each of the vector leg's first N hits scores the "
                            "larger of its own cosine and its best paragraph's or turn's (their "
                            "vectors are stored at sync); 0 = off, as in the reference."))


@st.fragment
def tune() -> None:
    """The sliders and all they change, as one fragment: a slider step reruns only this part
    (re-fusing the cached candidates, the results redrawn in place), not the app's picker, the
    sidebar or the header (issue #23; benchmarks/bench_slider.py)."""
    started = time.perf_counter()
    tuned_now = tuning.settings_values(state.tuned_settings(key))
    _load_widgets(tuned_now, only_missing=True)  # a widget not drawn last run lost its state
    ctl, main = st.columns([1, 2.6], gap="large")
    with ctl:
        weight_note = _weight_controls()
        _diversity_controls()
        _keyword_query_controls()
        sources = st.multiselect("Sources", idx.config.sources.sources, key="search_sources",
                                 placeholder="all sources")
        buttons = st.container(horizontal=True)  # one block, not three (st.columns)
        buttons.button("Reset", on_click=_reset, key="t_reset",
                  help="Back to the profile's settings.")

    widgets = {W + f: st.session_state[W + f] for f in tuning.TUNABLE
               if W + f in st.session_state}
    current: SearchSettings = tuning.settings_from_widgets(idx.settings(), widgets, W, tuned_now)
    state.set_tuned_values(key, tuning.settings_values(current))
    buttons.button("Pin as B", on_click=_pin_b, key="t_pin",
              help="Compare later settings against these.")
    with main:
        if not query.strip():
            st.info("Type a query. Try " + ", ".join(tuning.example_queries("`"))
                    + " on the demo.")
        elif off:
            search_view.qmd_results(key, query, current, sources)
        else:
            search_view.results(key, idx, query, current, sources, started=started,
                                weight_note=weight_note)


tune()
