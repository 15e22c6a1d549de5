"""Memory Workbench: the home page. Run with `make run` (or `streamlit run app.py`)."""

from __future__ import annotations

import streamlit as st

from workbench.state import current_index, workspace_picker

st.set_page_config(page_title="Memory Workbench", page_icon="🧠", layout="wide")
st.title("Memory Workbench")
idx = workspace_picker()
status = idx.status()
c1, c2, c3, c4 = st.columns(4)
c1.metric("Files", status.get("files", 0))
c2.metric("Chunks", status.get("chunks", 0))
c3.metric("Provider", f"{status.get('provider') or status['requestedProvider']}")
c4.metric("Dirty", "yes" if status.get("dirty") else "no")
if st.button("Index now", type="primary"):
    bar = st.progress(0.0, text="indexing…")

    def progress(stage: str, done: int, total: int) -> None:
        bar.progress(min(1.0, done / max(1, total)), text=f"{stage}: {done}/{total}")

    report = current_index().sync(progress=progress)
    bar.progress(1.0, text="done")
    st.success(f"{report.files_indexed} files indexed, {report.chunks_written} chunks written, "
               f"{report.embedded} embedded, {report.cache_hits} cache hits")
    status = idx.status()
query = st.text_input("Search the memory", key="home_query")
if query:
    res = idx.search(query)
    for h in res.hits:
        st.markdown(f"**{h.score:.3f}** `{h.citation}` · {h.source}")
        st.code(h.snippet, language="markdown")
    if not res.hits:
        st.info("No results.")
with st.expander("Full status"):
    st.json(status)
