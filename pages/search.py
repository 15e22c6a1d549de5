"""Search & tune: one query, live sliders, the gate at work, score composition, A/B, export.

Both legs' candidates are fetched once per query (``MemoryIndex.candidates``) and cached in the
session; a slider change only re-fuses them with ``MemoryIndex.fuse`` (no embedding, no SQL).
"""

from __future__ import annotations

import time
from typing import Any, get_args

import streamlit as st

from memory_core import MemoryIndex, SearchSettings
from memory_core import openclaw as oc
from memory_core import promotion as pr
from memory_core.config import FusionMode, KeywordQueryMode
from workbench import charts, evalruns, state, tuning

key = state.current_key()
idx = state.open_index(key)
st.title("Search & tune")
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
                      placeholder="e.g. who is on call right now?  ·  连接池  ·  COOKIE_EXPIRED")
state.set_shared_query(query)

ctl, main = st.columns([1, 2.6], gap="large")
with ctl:
    st.markdown("**Weights and gate**")
    if off:
        st.caption("qmd ranks by its own scores (BM25 over whole documents in `search` mode): "
                   "only minScore, maxResults (at most `[qmd] max_results`, 4) and the sources "
                   "apply; the other controls tune the builtin fusion and are disabled.")
    st.slider("vectorWeight", **tuning.slider_range("vector_weight"), key=W + "vector_weight",
              disabled=off, help=OFF_WHY if off else "Clamped to 0..1, then divided by the "
                                                     "sum of both weights.")
    st.slider("textWeight", **tuning.slider_range("text_weight"), key=W + "text_weight",
              disabled=off, help=OFF_WHY if off else None)
    st.slider("minScore", **tuning.slider_range("min_score"), key=W + "min_score",
              help="Hits scoring below stay visible, greyed.")
    st.slider("maxResults", **tuning.slider_range("max_results"), key=W + "max_results")
    st.slider("candidateMultiplier", **tuning.slider_range("candidate_multiplier"),
              key=W + "candidate_multiplier",
              disabled=off, help=OFF_WHY if off else "Each leg contributes its top "
                                                     "maxResults × candidateMultiplier (≤ 200).")
    st.selectbox("Fusion", FUSIONS, key=W + "fusion", disabled=off,
                 help=OFF_WHY if off else "reference: OpenClaw's weighted sum of leg scores; "
                 "rrf: weighted reciprocal rank; normalized: BM25 divided by the query's best.")
    if st.session_state[W + "fusion"] == "rrf":
        st.slider("RRF k", **tuning.slider_range("rrf_k"), key=W + "rrf_k", disabled=off)
    st.toggle("Hybrid (both legs)", key=W + "hybrid", disabled=off,
              help=OFF_WHY if off else None)
    st.markdown("**Diversity and recency**")
    st.toggle("MMR", key=W + "mmr_enabled", disabled=off, help=OFF_WHY if off else None)
    if st.session_state[W + "mmr_enabled"]:
        st.slider("MMR λ", **tuning.slider_range("mmr_lambda"), key=W + "mmr_lambda",
                  disabled=off, help="1 = relevance only, 0 = diversity only.")
    st.toggle("Temporal decay", key=W + "decay_enabled", disabled=off,
              help=OFF_WHY if off else None)
    if st.session_state[W + "decay_enabled"]:
        st.slider("Half-life (days)", **tuning.slider_range("half_life_days"),
                  key=W + "half_life_days", disabled=off)
        st.date_input("'Now' for decay", key=W + "now_ms", disabled=off,
                      help="Empty: the clock. Pin a date to replay a past moment.")
    st.slider("Date hint", **tuning.slider_range("date_hint"), key=W + "date_hint",
              disabled=off,
              help=OFF_WHY if off else "Bonus for diaries of a date the query names (“on 7 May "
                   "2023”), fading with distance; 0 = off, as in the reference.")
    with st.expander("Keyword query (refetches)"):
        st.radio("Terms", list(get_args(KeywordQueryMode)), key=W + "keyword_query",
                 horizontal=True, disabled=off,
                 help=OFF_WHY if off else "and: OpenClaw's query (every term); or: any term, "
                                          "BM25-ranked.")
        st.toggle("CJK bigrams", key=W + "cjk_bigrams", disabled=off,
                  help=OFF_WHY if off else "Search Chinese/Japanese/Korean text by character "
                                           "pairs.")
        st.toggle("Keyword-only hits fill free slots", key=W + "keyword_only_fill",
                  disabled=off, help=OFF_WHY if off else None)
    sources = st.multiselect("Sources", idx.config.sources.sources, key="search_sources",
                             placeholder="all sources")
    b1, b2 = st.columns(2)
    b1.button("Reset", on_click=_reset, key="t_reset", help="Back to the profile's settings.")

widgets = {W + f: st.session_state[W + f] for f in tuning.TUNABLE if W + f in st.session_state}
current: SearchSettings = tuning.settings_from_widgets(idx.settings(), widgets, W, tuned)
state.set_tuned_values(key, tuning.settings_values(current))
b2.button("Pin as B", on_click=_pin_b, key="t_pin", help="Compare later settings against these.")

# ----------------------------------------------------------------------------- results

with main:
    if not query.strip():
        st.info("Type a query. Try `COOKIE_EXPIRED`, `which colleague is leaving the company?`, "
                "`连接池` or `Who is on call right now?` on the demo workspace.")
        st.stop()
    if off:
        t0 = time.perf_counter()
        try:
            res = state.qmd_backend(key).search(
                query, max_results=current.max_results, min_score=current.min_score,
                sources=sources or None)
        except Exception as e:  # the builtin fallback itself failed
            st.error(f"Search failed: {e}")
            st.stop()
        q_ms = (time.perf_counter() - t0) * 1000
        if res.fallback is not None:
            st.warning(f"qmd could not answer; builtin answered instead: {res.fallback.reason}")
        m = st.columns(3)
        m[0].metric("Returned", len(res.hits))
        m[1].metric("Answered by", f"{res.backend} ({res.mode})")
        m[2].metric("Took", f"{q_ms:.0f} ms")
        rows = [{"rank": i, "citation": h.citation, "score": round(h.score, 3),
                 "source": h.source, "snippet": h.snippet} for i, h in enumerate(res.hits, 1)]
        st.dataframe(rows, hide_index=True, width="stretch", key="search_qmd_table",
                     column_config={"snippet": st.column_config.TextColumn(width="large")})
        st.stop()
    try:
        cands = state.get_candidates(key, query, current, sources)
    except Exception as e:  # e.g. the provider failed to embed the query
        st.error(f"Could not fetch candidates: {e}")
        st.stop()
    t0 = time.perf_counter()
    result = MemoryIndex.fuse(cands, current)
    fuse_ms = (time.perf_counter() - t0) * 1000
    gated = sum(1 for h in result.below_gate if h.score < current.min_score)
    m = st.columns(5)
    m[0].metric("Returned", len(result.hits))
    m[1].metric("Below minScore", gated)
    m[2].metric("Past maxResults", len(result.below_gate) - gated)
    m[3].metric("Candidates", f"{len(cands.vector)} + {len(cands.keyword)}",
                help="vector + keyword hits fetched (the pool; fusion uses the top "
                     f"{current.candidate_count()} of each)")
    m[4].metric("Re-ranked in", f"{fuse_ms:.1f} ms",
                help=f"mode {cands.mode}; fetch: " + ", ".join(
                    f"{k} {v:.0f} ms" for k, v in cands.timings_ms.items()))
    if result.abstention:
        st.info(f"No result: {result.abstention}.")
    if fuse_ms > 50:
        st.caption(f":orange[Re-ranking took {fuse_ms:.0f} ms (target 50 ms)"
                   + (": MMR compares every pair of the merged hits, so it grows fast with "
                      "maxResults × candidateMultiplier" if current.mmr_enabled else "")
                   + ".]")
    if cands.mode == "fts-only":
        st.caption("Keyword-only index (no embeddings): the reference's FTS-only ranking "
                   "applies; vector weight has no effect.")

    tab_res, tab_ab, tab_export = st.tabs(["Results", "A/B compare", "Export settings"])
    with tab_res:
        show_cut = st.slider("Removed hits shown", 0, 50, 10, key="search_cut",
                             help="Hits the gate or the cut removed, greyed below the results.")
        df = tuning.hits_frame(result, cut_limit=show_cut)
        config: dict[str, Any] = {"id": None,
                                  "snippet": st.column_config.TextColumn(width="large")}
        if not current.decay_enabled:
            config["decay"] = None  # hidden: always 1 without temporal decay
        st.dataframe(tuning.grey_removed(df), hide_index=True, width="stretch",
                     column_config=config, key="search_table")
        st.plotly_chart(charts.composition_figure(result, cut_limit=min(show_cut, 10)),
                        key="search_composition")
        rec_col, _ = st.columns([1, 2])
        if rec_col.button("Record as recall", key="search_record",
                          help="Record these hits on dated diaries as recalls (promotion "
                               "signals, spec §6.2). The workbench never records on its own."):
            n = pr.record_search(idx, query, result.hits)
            st.success(f"{n} recall(s) recorded (only hits on dated diaries count).")
        with st.expander("Label these hits (your own qrels, evaluated on Evaluate)"):
            judged = evalruns.label_store(key).judgements(query)
            marks: dict[str, str] = {}
            for i, h in enumerate(result.hits, 1):
                docid = evalruns.hit_docid(h.path, h.start_line, h.end_line)
                marks[docid] = st.radio(
                    f"{i}. `{h.citation}`", evalruns.LABEL_CHOICES, horizontal=True,
                    index=evalruns.LABEL_CHOICES.index(evalruns.label_of(judged, docid)),
                    key=evalruns.label_key(query, docid))
            if st.button("Save labels", key="search_save_labels"):
                n = evalruns.save_labels(key, query, marks)
                st.success(f"{n} hit(s) of this query judged, beside the index "
                           f"({evalruns.label_store(key).folder}); evaluate them on Evaluate "
                           "with the query set **labels**.")
        with st.expander("Snippets of the returned hits"):
            for i, h in enumerate(result.hits, 1):
                st.markdown(f"**{i}. `{h.citation}`** · {h.source} · score {h.score:.3f} "
                            f"(vector {h.vector_score:.3f} #{h.vector_rank or '–'}, "
                            f"text {h.text_score:.3f} #{h.text_rank or '–'})")
                st.text(h.snippet)

    with tab_ab:
        pinned = st.session_state.get("wb_pinned_b")
        options = (["pinned"] if pinned else []) + ["reference", "default"]
        labels = {"pinned": "B = pinned settings", "reference": "B = reference profile",
                  "default": "B = default profile"}
        choice = st.radio("Compare the current settings (A) with", options, key="ab_choice",
                          format_func=labels.__getitem__, horizontal=True)
        b_settings = (tuning.apply_values(idx.settings(), pinned) if choice == "pinned"
                      else state.profile_defaults(key, choice))
        b_cands = state.get_candidates(key, query, b_settings, sources)
        result_b = MemoryIndex.fuse(b_cands, b_settings)
        mv = tuning.rank_movement(result, result_b)
        st.metric("Rank movements (A → B)", mv.moved + mv.new + mv.dropped, help=mv.summary())
        st.caption(mv.summary())
        ca, cb = st.columns(2)
        with ca:
            st.markdown("**A — current settings**")
            st.dataframe(tuning.hits_frame(result, cut_limit=0)[
                ["rank", "citation", "score", "via"]], hide_index=True, width="stretch",
                key="ab_table_a")
        with cb:
            st.markdown(f"**B — {labels[choice][4:]}**")
            st.dataframe(tuning.blank_ranks(mv.rows, ["rank B", "rank A"]), hide_index=True,
                         width="stretch", key="ab_table_b")
        diff = tuning.settings_diff(current, b_settings)
        if diff:
            st.caption("Settings that differ (A vs B): " + ", ".join(
                f"{k} {a!r} → {b!r}" for k, (a, b) in diff.items()))

    with tab_export:
        text = tuning.openclaw_export_json(current)
        st.markdown("The tuned values in OpenClaw's config shape (`memorySearch.query`, spec "
                    "§4.1): paste under `agents.defaults` (or one agent's override).")
        st.code(text, language="json")
        st.download_button("Export settings", data=text, file_name="memorySearch.json",
                           mime="application/json", key="export_download", type="primary")
        extra = tuning.not_carried(current)
        if extra:
            st.warning("Not expressible in OpenClaw's config (this project's improvements): "
                       + "; ".join(extra) + ". An agent using the exported block ranks as the "
                       "reference does.")
        oc_home = state.current_home(key)
        if oc_home is not None:  # write into the home's openclaw.json (memory_core.openclaw)
            plan = oc.plan_export(oc_home.config_path, current)
            st.markdown(f"**Into `{oc_home.config_path}`**: only the values that differ, in "
                        "place, comments kept, a backup first.")
            if plan.diff:
                st.code(plan.diff, language="diff")
            else:
                st.caption("openclaw.json already says this.")
            for why in plan.refused:
                st.warning(f"Not written automatically: {why}.")
            if plan.manual_patch:
                st.caption("To add by hand:")
                st.code(plan.manual_patch, language="json")
            if plan.changes and st.button("Write openclaw.json", key="export_openclaw",
                                          disabled=not plan.ok):
                try:
                    backup = oc.apply_export(plan)
                except ValueError as e:  # a read-only openclaw.json: refused, one line
                    st.error(str(e))
                else:
                    st.success(f"Wrote {len(plan.changes)} setting(s) into openclaw.json; the "
                               f"previous file is {backup}.")
