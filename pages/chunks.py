"""Chunks: the workspace's files by source, a file's chunks, the source with a chunk highlighted,
and what ``memory_get`` would return."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from memory_core import PathRefused
from workbench import chunkview, live, state

FILES_PER_PAGE = 200

key = state.current_key()
st.title("Chunks")
idx = state.ensure_indexed(key)
live.refresh(key)  # a sync or rebuild by another process since the last run: read the new index
st.caption(key.label())

files = idx.files()
if not files:
    st.info("No files are indexed in this workspace.")
    st.stop()
needle = st.text_input("Filter chunks by text", key="chunks_filter",
                       placeholder="e.g. PgBouncer, 连接池 (case-insensitive)")
# counts by SQL, not by loading every chunk (100k chunks: the page stays instant)
counts = idx.chunk_counts(needle or None)
per_file = {p: n for p, (n, _) in counts.items()}
matches = {p: m for p, (_, m) in counts.items() if m} if needle else {}

left, right = st.columns([1.35, 2.4], gap="large")
with left:
    sources = sorted({f.source for f in files})
    source = st.radio("Source", ["all", *sources], key="chunks_source", horizontal=True)
    shown = [f for f in files if (source == "all" or f.source == source)
             and (not needle or f.path in matches)]
    if needle:
        st.caption(f"{sum(matches.values())} chunk(s) in {len(matches)} file(s) contain "
                   f"“{needle}”.")
    if not shown:
        st.warning("No file matches.")
        st.stop()
    if len(shown) > FILES_PER_PAGE:  # a page of files at a time: never 10k rows to the browser
        pages = (len(shown) + FILES_PER_PAGE - 1) // FILES_PER_PAGE
        if not 1 <= st.session_state.get("chunks_page", 1) <= pages:  # the filter shrank it
            st.session_state["chunks_page"] = 1
        page = int(st.number_input(f"Page (of {pages}, {len(shown)} files)", min_value=1,
                                   max_value=pages, value=1, step=1, key="chunks_page"))
        shown = shown[(page - 1) * FILES_PER_PAGE : page * FILES_PER_PAGE]
    table = pd.DataFrame([{
        **({"source": f.source} if source == "all" else {}), "path": f.path,
        "chunks": per_file.get(f.path, 0),
        **({"matches": matches.get(f.path, 0)} if needle else {}),
        **({"bad lines": f.bad_lines} if any(x.bad_lines for x in shown) else {}),
    } for f in shown])
    st.dataframe(table, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(shown)),
                 key="chunks_files")
    paths = [f.path for f in shown]
    if st.session_state.get("chunks_file") not in paths:
        st.session_state["chunks_file"] = paths[0]
    path = st.selectbox("File", paths, key="chunks_file",
                        format_func=lambda p: f"{p} ({per_file.get(p, 0)} chunks)")

rows = idx.chunks(path)
frame = chunkview.chunk_frame(rows, needle)
with right:
    st.subheader(f"`{path}`")
    if frame.empty:
        st.info("This file has no chunks (empty, or nothing left after rendering).")
        st.stop()
    st.dataframe(frame, hide_index=True, width="stretch", key="chunks_table",
                 column_config={"id": None, "start": None, "end": None,
                                "match": st.column_config.CheckboxColumn() if needle else None,
                                "preview": st.column_config.TextColumn(width="large")})
    total = int(frame["tokens (est.)"].sum())
    st.caption(f"{len(frame)} chunks, ~{total} tokens; overlaps are shared lines with the "
               "neighbouring chunk (the chunker carries the tail of one chunk into the next).")
    labels = [f"#{r['#']} · {r['lines']}" + (" · match" if r["match"] else "")
              for _, r in frame.iterrows()]
    first_match = next((i for i, r in frame.iterrows() if r["match"]), 0)
    if st.session_state.get("chunks_chunk_path") != path:
        st.session_state["chunks_chunk"] = labels[int(first_match)]
        st.session_state["chunks_chunk_path"] = path
    if st.session_state.get("chunks_chunk") not in labels:
        st.session_state["chunks_chunk"] = labels[0]
    label = st.selectbox("Chunk", labels, key="chunks_chunk")
    row = frame.iloc[labels.index(label)]
    start, end = int(row["start"]), int(row["end"])

    tab_src, tab_text, tab_get = st.tabs(["Source, chunk highlighted", "Chunk text",
                                          "memory_get"])
    with tab_src:
        whole = st.toggle("Whole file", value=True, key="chunks_whole",
                          help="Off: only the chunk and 15 lines around it.")
        try:
            src = chunkview.source_lines(idx, path)
        except (FileNotFoundError, OSError, ValueError) as e:
            st.warning(f"Cannot read the source: {e}")
        else:
            if any(n != i + 1 for i, n in enumerate(src.numbers)):
                st.caption("A transcript: rendered User/Assistant lines, numbered by their "
                           "JSONL line (what chunk ranges and citations use).")
            st.html(chunkview.highlight_html(src, start, end, context=None if whole else 15,
                                             needle=needle))
    with tab_text:
        chunk = next(c for c in rows if c.id == row["id"])
        st.caption(f"id `{chunk.id[:16]}…` · hash `{chunk.hash[:12]}…` · "
                   f"{row['tokens (est.)']} tokens (est.)")
        st.text(chunk.text)
    with tab_get:
        c1, c2 = st.columns(2)
        from_line = c1.number_input("from", min_value=1, value=start, step=1,
                                    key=f"get_from_{path}_{start}")
        n_lines = c2.number_input("lines", min_value=1, value=end - start + 1, step=1,
                                  key=f"get_lines_{path}_{start}")
        try:
            res = idx.get(path, int(from_line), int(n_lines))
        except PathRefused as e:
            st.warning(f"memory_get refuses this path: {e}")
        except (FileNotFoundError, OSError) as e:
            st.warning(f"memory_get failed: {e}")
        else:
            st.caption(f"`memory_get(path={path!r}, from={int(from_line)}, "
                       f"lines={int(n_lines)})` returns:")
            st.json(res.to_dict())
