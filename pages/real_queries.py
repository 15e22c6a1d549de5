"""Real queries: the agent's own memory_search calls (from its transcripts), what each got
then, what it gets now with the tuned settings, and label-free metrics. A view over
``memory_core.openclaw``; nothing is recorded."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from memory_core import openclaw as oc
from workbench import chunkview, state

key = state.current_key()
st.title("Real queries")
state.index_caption(key)
home = state.current_home(key)
idx = state.ensure_indexed(key)
files = state.transcripts(key)
if home is not None:
    st.caption(f"Agent `{home.agent}` of `{home.root}` · {len(files)} transcripts in "
               f"`{home.sessions_dir}`")
else:
    st.caption(f"Transcripts of `{idx.workspace / 'sessions'}` · {len(files)} files "
               "(open an OpenClaw home in the sidebar for an agent's own)")
queries = state.mined_queries(key, files)
if not queries:
    st.info("No memory_search call in these transcripts.")
    st.stop()

settings = state.tuned_settings(key)
k = int(settings.max_results)
with st.spinner(f"Running {len(queries)} real queries again…"):
    asked = tuple((q.query, q.at) for q in queries)
    comps = state.memo("real-compare", key, (asked, repr(settings)),
                       lambda: oc.compare(idx, queries, settings))
m = oc.metrics(comps, k)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


c = st.columns(4)
c[0].metric("Zero results then", _pct(m.zero_rate_then))
c[1].metric("Zero results now", _pct(m.zero_rate_now),
            help="With the settings tuned on Search & tune (or the profile's).")
c[2].metric(f"Overlap@{k}", _pct(m.overlap_at_k),
            help="Share of the top results then found among the top results now "
                 "(same file, overlapping lines).")
c[3].metric("Score spread", "—" if m.score_spread is None else f"{m.score_spread:.3f}",
            help="Best minus k-th score now, averaged: how decided the ranking is.")

rows = [{"when": (cm.query.to_dict()["at"] or "")[:16].replace("T", " "),
         "query": cm.query.query, "then": len(cm.query.results_then or []),
         "now": len(cm.now), "overlap": _pct(cm.overlap), "session": cm.query.session}
        for cm in comps]
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="rq_table")


@st.fragment
def _then_and_now(comps: list[oc.QueryComparison]) -> None:
    """One query's results then and now. A fragment: picking a query redraws this block, not
    the page (issue #35: a click within 3x a bare Streamlit rerun)."""
    labels = [f"{i + 1}. {cm.query.query}" for i, cm in enumerate(comps)]
    pick = st.selectbox("Query", range(len(comps)), format_func=labels.__getitem__,
                        key="rq_pick")
    chosen = comps[pick]
    left, right = st.columns(2)
    for col, title, results in ((left, "Then (what the agent got)",
                                 chosen.query.results_then or []),
                                (right, "Now (tuned settings)", chosen.now)):
        with col:
            st.subheader(title)
            # one element a side, not two a hit (a pick redraws them all); each snippet in a
            # plain-text block: a diary's "# 2026-11-20" is a line of memory, not a heading
            st.markdown("\n\n".join(
                f"**{r['score']:.3f}** `{r['path']}#L{r['startLine']}-L{r['endLine']}`\n"
                + chunkview.plain_block(r["snippet"][:300]) for r in results) or "No result.")


_then_and_now(comps)
