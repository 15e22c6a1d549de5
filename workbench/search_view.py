"""Search & tune's result views (Streamlit): the metrics, the results with the snippet of the
hit in focus, the A/B comparison and the export.

``pages/search.py`` draws its sliders and calls :func:`results` inside one ``st.fragment``: a
slider step reruns only that fragment, which re-fuses the session's cached candidates
(:func:`state.get_candidates`, fetched once per query) and redraws the results in place (same
element keys: the table is updated, not rebuilt), instead of the whole app with its picker,
sidebar and watcher checks. What a step sends is kept small, since the browser's redraw of each
element is most of a step's time: the score composition as HTML bars (``scorebars``; the Plotly
figure, the labels' radios and the snippets only inside expanders while open), the metrics in
one flex row. The A/B and export tabs are computed only while open
(``st.tabs(on_change="rerun")``), and B's candidates come from the same session cache.
``benchmarks/bench_slider.py`` measures the result against a bare Streamlit slider.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import streamlit as st

from memory_core import Candidates, FusionResult, Hit, MemoryIndex, SearchSettings
from memory_core import openclaw as oc
from memory_core import promotion as pr
from memory_core.evaluation.trec import chunk_docid

from . import charts, chunkview, evalruns, scorebars, state, tuning
from .state import IndexKey

TABS = ["Results", "A/B compare", "Export settings"]

#: The results table's columns at 1440 px: every per-leg figure in view, the snippet in the
#: pane below (not in the grid's data: the greying Styler's cost grows with every column).
RESULT_COLUMNS: dict[str, Any] = {
    "rank": st.column_config.TextColumn("rank", width=42),
    "status": st.column_config.TextColumn("status", width=110),  # "past maxResults" whole
    "citation": st.column_config.TextColumn("citation", width=160,
                                            help="cut from the left: the file and line range"),
    "score": st.column_config.NumberColumn("score", width=54),
    "vectorScore": st.column_config.NumberColumn("vector", width=54,
                                                 help="vectorScore: the cosine"),
    "textScore": st.column_config.NumberColumn("text", width=54,
                                               help="textScore: the keyword leg's score"),
    "vector rank": st.column_config.TextColumn("# vec", width=48,
                                               help="rank in the vector leg"),
    "text rank": st.column_config.TextColumn("# text", width=48,
                                             help="rank in the keyword leg"),
    "via": st.column_config.TextColumn("via", width=58),
    "decay": st.column_config.NumberColumn("decay", width=54),
}


def qmd_results(key: IndexKey, query: str, current: SearchSettings,
                sources: Sequence[str]) -> None:
    """qmd's answer (its own ranking: no fusion, so no re-ranking either)."""
    t0 = time.perf_counter()
    try:  # once per query and limits (a qmd search is a process, seconds): a rerun reuses it
        res = state.memo("qmd-search", key, (query, current.max_results, current.min_score,
                                             tuple(sources)),
                         lambda: state.qmd_backend(key).search(
                             query, max_results=current.max_results,
                             min_score=current.min_score, sources=list(sources) or None))
    except Exception as e:  # the builtin fallback itself failed
        st.error(f"Search failed: {e}")
        return
    q_ms = (time.perf_counter() - t0) * 1000
    if res.fallback is not None:
        st.warning(f"qmd could not answer; builtin answered instead: {res.fallback.reason}")
    m = st.columns(3)
    m[0].metric("Returned", len(res.hits))
    m[1].metric("Answered by", f"{res.backend} ({res.mode})")
    m[2].metric("Took", f"{q_ms:.0f} ms")
    rows = [{"rank": i, "citation": h.citation, "score": round(h.score, 3),
             "source": h.source, "snippet": chunkview.without_hunk_header(h.snippet)}
            for i, h in enumerate(res.hits, 1)]
    st.dataframe(rows, hide_index=True, width="stretch", key="search_qmd_table",
                 column_config={"snippet": st.column_config.TextColumn(width="large")})


def results(key: IndexKey, idx: MemoryIndex, query: str, current: SearchSettings,
            sources: Sequence[str], *, started: float, weight_note: Any) -> None:
    """The builtin results of ``query`` under ``current``: metrics, then the three tabs.

    ``started`` is when the fragment's run began (``time.perf_counter()``): the "Redrawn in"
    metric is the whole run, widgets included. ``weight_note`` is the slot under the weight
    sliders for the reason a weight does nothing.
    """
    try:
        cands = state.get_candidates(key, query, current, sources)
    except Exception as e:  # e.g. the provider failed to embed the query
        st.error(f"Could not fetch candidates: {e}")
        return
    t0 = time.perf_counter()
    result = MemoryIndex.fuse(cands, current)
    fuse_ms = (time.perf_counter() - t0) * 1000
    notes = tuning.weight_notes(cands, current)
    if notes:
        weight_note.caption(" ".join(f":material/info: {n}" for n in notes.values()))
    removed = tuning.removed_counts(result)
    # one flex row, not st.columns(6): a slider step sends one block for it, not seven
    m = st.container(horizontal=True, gap="small")
    m.metric("Returned", len(result.hits), width="content")
    if removed[tuning.ABSTAINED]:  # a calibrated search that returns nothing: abstained
        m.metric("Abstained", removed[tuning.ABSTAINED], width="content",
                 help=result.abstention or None)
    m.metric("Below minScore", removed[tuning.GATED], width="content")
    m.metric("Past maxResults", removed[tuning.CUT], width="content")
    m.metric("Candidates", f"{len(cands.vector)} + {len(cands.keyword)}", width="content",
             help="vector + keyword hits fetched (the pool; fusion uses the top "
                  f"{current.candidate_count()} of each)")
    m.metric("Re-ranked in", f"{fuse_ms:.1f} ms", width="content",
             help=f"mode {cands.mode}; fetch: " + ", ".join(
                 f"{k} {v:.0f} ms" for k, v in cands.timings_ms.items()))
    redrawn = m.empty()
    if result.abstention:  # the default profile's "nothing relevant is stored", and why
        st.info(f"No result: {result.abstention}.")
    st.caption(tuning.settings_line(current))
    if fuse_ms > 50:
        st.caption(f":orange[Re-ranking took {fuse_ms:.0f} ms (target 50 ms)"
                   + (": MMR compares every pair of the merged hits, so it grows fast with "
                      "maxResults × candidateMultiplier" if current.mmr_enabled else "")
                   + ".]")
    tab_res, tab_ab, tab_export = st.tabs(TABS, key="search_tab", on_change="rerun")
    if tab_res.open:
        with tab_res:
            _results_tab(key, idx, query, cands, result)
    if tab_ab.open:
        with tab_ab:
            _ab_tab(key, idx, query, sources, cands, result)
    if tab_export.open:
        with tab_export:
            _export_tab(key, current)
    ms = (time.perf_counter() - started) * 1000
    redrawn.metric("Redrawn in", f"{ms:.0f} ms", width="content",
                   help="This part of the page, from the slider's change reaching the server "
                        "to the last element sent (widgets, fusion, tables, figure); the "
                        "browser's drawing comes on top (benchmarks/bench_slider.py measures "
                        "both against a bare Streamlit slider).")


def _results_tab(key: IndexKey, idx: MemoryIndex, query: str, cands: Candidates,
                 result: FusionResult) -> None:
    current = result.settings
    if not result.hits and not result.abstention:
        st.info(f"Nothing returned: {tuning.empty_reason(cands, result)}.")
    show_cut = st.slider("Removed hits shown", 0, 50, 10, key="search_cut",
                         help="Hits the gate or the cut removed, greyed below the results.")
    df = tuning.hits_frame(result, cut_limit=show_cut)
    config = dict(RESULT_COLUMNS)
    if not current.decay_enabled:
        config["decay"] = None  # hidden: always 1 without temporal decay
    df["citation"] = df["citation"].map(tuning.tail)
    picked = st.dataframe(tuning.grey_removed(df[list(RESULT_COLUMNS)]), hide_index=True,
                          width="stretch", column_config=config, key="search_table",
                          on_select="rerun", selection_mode="single-row")
    shown = [*result.hits, *result.below_gate[:show_cut]]
    rows = list(getattr(getattr(picked, "selection", None), "rows", None) or [])
    terms = tuning.query_terms(query)
    if shown:
        i = rows[0] if rows and rows[0] < len(shown) else 0
        h = shown[i]
        st.markdown(_hit_line(f"{df['rank'].iloc[i] if h.passed else tuning.hit_status(h)} ·", h)
                    + ("" if rows else " — select a row to read another hit"))
        st.html(chunkview.snippet_html(h.snippet, terms))
    # HTML bars, not the Plotly figure: a slider step redraws them at once (scorebars)
    st.html(scorebars.composition_html(result, cut_limit=min(show_cut, 10)))
    chart = st.expander("Interactive chart of the composition", key="search_chart",
                        on_change="rerun")
    if chart.open:
        with chart:
            st.plotly_chart(charts.composition_figure(result, cut_limit=min(show_cut, 10)),
                            key="search_composition")
    if st.button("Record as recall", key="search_record", disabled=idx.readonly,
                      help="Record these hits on dated diaries as recalls (promotion "
                           "signals, spec §6.2). The workbench never records on its own."):
        n = pr.record_search(idx, query, result.hits)
        st.success(f"{n} recall(s) recorded (only hits on dated diaries count).")
    _labels(key, query, result)
    snippets = st.expander("Snippets of the returned hits", key="search_snippets",
                           on_change="rerun")
    if snippets.open:
        with snippets:
            for i, h in enumerate(result.hits, 1):
                st.markdown(_hit_line(f"{i}.", h))
                st.html(chunkview.snippet_html(h.snippet, terms))


def _hit_line(tag: str, h: Hit) -> str:
    """A hit's heading over its snippet: ``tag``, citation, source, score and each leg's."""
    return (f"**{tag} `{h.citation}`** · {h.source} · score {h.score:.3f} (vector "
            f"{h.vector_score:.3f} #{h.vector_rank or '–'}, text {h.text_score:.3f} "
            f"#{h.text_rank or '–'})")


def _labels(key: IndexKey, query: str, result: FusionResult) -> None:
    """Mark the hits relevant or not: the user's own qrels beside the index (issue #22),
    evaluated on Evaluate as the query set ``labels``."""
    box = st.expander("Label these hits (your own qrels, evaluated on Evaluate)",
                      key="search_labels", on_change="rerun")
    if not box.open:  # its radios, one per hit, are drawn only while it is open
        return
    with box:
        judged = evalruns.label_store(key).judgements(query)
        marks: dict[str, str] = {}
        for i, h in enumerate(result.hits, 1):
            docid = chunk_docid(h.path, h.start_line, h.end_line)
            marks[docid] = st.radio(
                f"{i}. `{h.citation}`", evalruns.LABEL_CHOICES, horizontal=True,
                index=evalruns.LABEL_CHOICES.index(evalruns.label_of(judged, docid)),
                key=evalruns.label_key(query, docid))
        if st.button("Save labels", key="search_save_labels"):
            n = evalruns.save_labels(key, query, marks)
            st.success(f"{n} hit(s) of this query judged, beside the index "
                       f"({evalruns.label_store(key).folder}); evaluate them on Evaluate "
                       "with the query set **labels**.")


def _ab_tab(key: IndexKey, idx: MemoryIndex, query: str, sources: Sequence[str],
            cands: Candidates, result: FusionResult) -> None:
    current = result.settings
    choice = st.radio("Compare the current settings (A) with", state.b_choices(key),
                      key="ab_choice", format_func=lambda c: f"B = {state.B_LABELS[c]}",
                      horizontal=True)
    b_settings = state.b_settings(key, choice)
    b_cands = state.get_candidates(key, query, b_settings, sources)  # cached after the first
    result_b = MemoryIndex.fuse(b_cands, b_settings)
    mv = tuning.rank_movement(result, result_b)
    st.metric("Rank movements (A → B)", mv.moved + mv.new + mv.dropped, help=mv.summary())
    st.caption(mv.summary())
    ca, cb = st.columns(2)
    with ca:
        st.markdown("**A — current settings**")
        if not result.hits:
            st.info(f"A returns nothing: {tuning.empty_reason(cands, result)}.")
        frame_a = tuning.hits_frame(result, cut_limit=0)
        frame_a["citation"] = frame_a["citation"].map(tuning.tail)
        st.dataframe(frame_a[["rank", "citation", "score", "via"]], hide_index=True,
                     width="stretch", key="ab_table_a", column_config=RESULT_COLUMNS)
    with cb:
        st.markdown(f"**B — {state.B_LABELS[choice]}**")
        if not result_b.hits:
            st.info(f"B returns nothing: {tuning.empty_reason(b_cands, result_b)}.")
        st.dataframe(tuning.blank_ranks(mv.rows, ["rank B", "rank A"]).assign(
            citation=mv.rows["citation"].map(tuning.tail)), hide_index=True,
            width="stretch", key="ab_table_b", column_config={
                **RESULT_COLUMNS, **{c: st.column_config.Column(width=w) for c, w in (
                    ("rank B", 56), ("rank A", 56), ("movement", 76))}})
    diff = tuning.settings_diff(current, b_settings)
    if diff:
        st.caption("Settings that differ (A vs B): " + ", ".join(
            f"{k} {chunkview.display_value(a)} → {chunkview.display_value(b)}"
            for k, (a, b) in diff.items()))


def _export_tab(key: IndexKey, current: SearchSettings) -> None:
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
    if oc_home is None:
        return
    # write into the home's openclaw.json (memory_core.openclaw)
    plan = oc.plan_export(oc_home.config_path, current)
    st.markdown(f"**Into `{oc_home.config_path}`**: only the values that differ, in "
                "place, comments kept, a backup first.")
    if plan.diff:
        st.code(plan.diff, language="diff")
    else:
        st.caption("openclaw.json already says this.")
    for why in plan.refused:
        st.warning(f"Not written automatically: {why}.")
    for why in plan.untranslated:
        st.warning(f"{why}.")
    if plan.manual_patch:
        st.caption("To add by hand:")
        st.code(plan.manual_patch, language="json")
    # openclaw.json is the user's tracked file: written only once they said so, here
    sure = bool(plan.changes) and st.checkbox(
        f"Yes, change `{oc_home.config_path.name}` as shown", key="export_confirm",
        help="The agent reads this file: the diff above is what changes (a backup first).")
    if plan.changes and st.button("Write openclaw.json", key="export_openclaw",
                                  disabled=not plan.ok or not sure):
        try:
            backup = oc.apply_export(plan)
        except ValueError as e:  # a read-only openclaw.json: refused, one line
            st.error(str(e))
        else:
            st.success(f"Wrote {len(plan.changes)} setting(s) into openclaw.json; the "
                       f"previous file is {backup}.")
