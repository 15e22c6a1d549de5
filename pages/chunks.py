"""Chunks: the workspace's files by source, a file's chunks, the source with a chunk highlighted,
and what ``memory_get`` would return."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from memory_core import PathRefused
from workbench import chunkview, state

FILES_PER_PAGE = 200

key = state.current_key()
st.title("Chunks")
idx = state.ensure_indexed(key)
st.caption(key.label())

known = idx.file_page(limit=0).sources  # files per source: one GROUP BY, never every file
if not known:
    st.info("No files are indexed in this workspace.")
    st.stop()
needle = st.text_input("Filter chunks by text", key="chunks_filter",
                       placeholder="e.g. PgBouncer, 连接池 (case-insensitive)")
matches: dict[str, tuple[str, int, int]] = {}
if needle:  # a scan of every chunk's text: progress shown, then remembered per needle
    bar, progress = state.progress_bar("Searching the chunks' text")
    matches = chunkview.text_matches(idx, needle, lambda done, total: progress(
        "chunks", done, total))
    bar.empty()

left, right = st.columns([1.5, 2.4], gap="large")
with left:
    source = st.radio("Source", ["all", *known], key="chunks_source", horizontal=True)
    kept = (sorted((s_, p) for p, (s_, _, _) in matches.items()
                   if source == "all" or s_ == source) if needle else None)
    total = len(kept) if kept is not None else (
        known.get(source, 0) if source != "all" else sum(known.values()))
    if needle:
        st.caption(f"{sum(m for _, _, m in matches.values())} chunk(s) in {len(matches)} "
                   f"file(s) contain “{needle}”.")
    if not total:
        st.warning("No file matches.")
        st.stop()
    page = 1
    if total > FILES_PER_PAGE:  # a page of files at a time: never 10k rows to the browser
        pages = (total + FILES_PER_PAGE - 1) // FILES_PER_PAGE
        if not 1 <= st.session_state.get("chunks_page", 1) <= pages:  # the filter shrank it
            st.session_state["chunks_page"] = 1
        page = int(st.number_input(f"Page (of {pages}, {total} files)", min_value=1,
                                   max_value=pages, value=1, step=1, key="chunks_page"))
    listing = idx.file_page(None if source == "all" else source, (page - 1) * FILES_PER_PAGE,
                            FILES_PER_PAGE, [p for _, p in kept] if kept is not None else None)
    shown, per_file = listing.files, listing.chunks
    table = pd.DataFrame([{
        **({"source": f.source} if source == "all" else {}), "path": f.path,
        "chunks": per_file.get(f.path, 0),
        **({"matches": matches[f.path][2]} if needle else {}),
        **({"bad lines": f.bad_lines} if any(x.bad_lines for x in shown) else {}),
    } for f in shown])
    st.dataframe(table, hide_index=True, width="stretch", height=min(420, 38 + 35 * len(shown)),
                 key="chunks_files", column_config={  # at 1440 px every column whole
                     c: st.column_config.Column(width=w) for c, w in
                     (("source", 68), ("chunks", 50), ("matches", 64), ("bad lines", 70))})
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
    # issue #34: this file's lines a later memory line superseded, each with the newer line
    sup = [r for r in idx.supersessions() if r.old_path == path]
    if sup:
        st.caption("Superseded: " + "; ".join(f"L{r.old_line} by `{r.new_citation}`"
                                                for r in sup), help="memory_core.base.supersession")
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
