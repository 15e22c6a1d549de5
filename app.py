"""Memory Workbench: the home page and the navigation. Run with `make run`.

(`streamlit run app.py` also works.) The sidebar picks the workspace for every page; the home page
shows the index at a glance and indexes on demand. The other pages live in ``pages/``; each is a
thin view over :class:`memory_core.MemoryIndex`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

# The first thing a visitor sees, before the engine's imports (seconds on a cold machine) and
# the model load: without it the first visit is Streamlit's raw file list over a blank page.
st.set_option("client.toolbarMode", "viewer")  # no "Deploy" button: this is a local tool
# a local file: a ":material/…:" icon is fetched from fonts.gstatic.com and an emoji from a
# CDN by the browser, and nothing may leave the machine while the workbench runs
st.set_page_config(page_title="Memory Workbench",
                   page_icon=str(Path(__file__).parent / "workbench" / "assets" / "icon.png"),
                   layout="wide")
boot = st.empty()
if not st.session_state.get("wb_warm"):
    boot.info("Starting Memory Workbench: opening the workspace and loading the embedding "
              "model (up to a minute on the first visit)…", icon=":material/hourglass_top:")

import pandas as pd  # noqa: E402 - after the first message, see above

from memory_core.status import Status, TruncationInfo  # noqa: E402
from workbench import chunkview, live, projection, state  # noqa: E402

PAGES_INFO = [
    ("pages/search.py", "Search & tune", ":material/manage_search:", "search",
     "Type a query, move the sliders: the cached candidates are re-fused at once. Gated hits "
     "stay visible, greyed; A/B comparison; export to OpenClaw's config."),
    ("pages/chunks.py", "Chunks", ":material/segment:", "chunks",
     "Files by source, their chunks with line ranges, token estimates and overlaps; the source "
     "with the chunk highlighted; what memory_get returns."),
    ("pages/embedding_map.py", "Embedding map", ":material/scatter_plot:", "map",
     "UMAP or PCA of every chunk embedding; the query projected with its hits; box or lasso "
     "selection lists the chunks."),
    ("pages/evaluate.py", "Evaluate", ":material/query_stats:", "evaluate",
     "Labelled query sets: Recall, Success, MRR, nDCG per leg and hybrid; sweep heatmap; "
     "per-query wins and losses."),
    ("pages/promotion.py", "Promotion", ":material/upgrade:", "promotion",
     "Candidates for MEMORY.md with their score components, the diff, apply and undo."),
    ("pages/real_queries.py", "Real queries", ":material/history:", "real-queries",
     "The agent's own memory_search calls from its transcripts: what each got then, what it "
     "gets now, zero-result rates and overlap."),
]


def _yes(flag: Any) -> str:
    return ":green[:material/check_circle: available]" if flag else (
        ":red[:material/cancel: unavailable]")


def _truncation(key: state.IndexKey) -> TruncationInfo:
    """The share of chunks the model truncates, measured once per index generation."""
    with st.spinner("Measuring chunk lengths in model tokens…"):  # shown after 0.5 s
        return state.memo("truncation", key, (), state.open_index(key).truncation)


def _home_settings(key: state.IndexKey, idx: Any) -> None:
    """For an OpenClaw home: each setting in force and where it came from."""
    oc_home = state.current_home(key)
    if oc_home is None:
        return
    st.subheader("Settings and where they come from")
    st.caption(f"Agent `{oc_home.agent}` of `{oc_home.root}` · workspace from "
               f"{oc_home.workspace_from} · sessions `{oc_home.sessions_dir}`")
    tuned = state.tuned_values(key)
    rows = oc_home.settings(idx.config, overrides={"search": tuned} if tuned else None)
    st.dataframe(pd.DataFrame([{"setting": r.label, "value": chunkview.display_value(r.value),
                                "from": r.source, "where": r.where} for r in rows]),
                 hide_index=True, width="stretch",
                 column_config={c: st.column_config.Column(width=w) for c, w in (
                     ("setting", 145), ("value", 170), ("from", 135), ("where", 525))})
    for note in oc_home.mapped.notes:
        st.caption(note)


def home() -> None:
    """The home page: the workspace's index at a glance, and "Index now"."""
    key = state.current_key()
    idx = state.open_index(key)
    st.title("Memory Workbench")
    st.caption(f"Workspace `{idx.workspace}` · index `{idx.store_path}`")
    live.home_note(key)  # who follows the files (a watcher process, this workbench, nobody)
    projection.warm_up()  # start compiling UMAP in the background (~45 s the first time)

    _index_now(key, idx)

    status = idx.status()
    if not status.indexed:
        st.info("This workspace is not indexed yet: press **Index now** (the other pages also "
                "index it on first use).")
    _status_metrics(status)

    left, right = st.columns(2)
    with left:
        _sources_table(status)
    with right:
        _search_legs(key, status)
    _home_settings(key, idx)
    _status_warnings(status)

    _page_links(status)


def _index_now(key: state.IndexKey, idx: Any) -> None:
    """The "Index now" button (and "Full rebuild"): sync the index with a progress bar, then
    say what it did, or why it failed in the engine's own words."""
    c_btn, c_force, _ = st.columns([1, 1.4, 4])
    force = c_force.checkbox("Full rebuild", key="home_force",
                             help="Re-chunk and re-embed everything (the embedding cache "
                                  "still saves the model's work).")
    if c_btn.button("Index now", type="primary", key="home_index", disabled=idx.readonly,
                    help="Disabled: the index is open read-only ($MEMORY_WORKBENCH_READONLY)."
                    if idx.readonly else None):
        bar, progress = state.progress_bar("Indexing")
        try:
            report = state.sync_index(key, force=force, progress=progress)
        except Exception as e:  # the engine's message says why (locked, unreadable…)
            bar.empty()
            st.error(f"Indexing failed: {e}")
        else:
            bar.progress(1.0, text="Indexing: done")
            st.success(
                f"{report.files_indexed} files indexed ({report.files_unchanged} unchanged, "
                f"{report.files_deleted} deleted), {report.chunks_written} chunks written, "
                f"{report.embedded} embedded, {report.cache_hits} from the embedding cache, "
                f"in {report.duration_ms / 1000:.1f} s"
                + (f" — full rebuild: {report.reason}" if report.full and report.reason else ""))
            for w in report.warnings:
                st.warning(w)


def _status_metrics(status: Status) -> None:
    """The index at a glance (files, chunks, provider, search mode, up to date), the model's
    settings, and the notices that the index is not what was asked for (a provider fallback,
    an index built with other settings)."""
    provider = status.provider or "—"
    model = status.model or ""
    c = st.columns(5)
    c[0].metric("Files", status.files)
    c[1].metric("Chunks", status.chunks)
    c[2].metric("Provider", provider, help=f"model: {model or '—'}; requested: "
                f"{status.requested_provider}")
    c[3].metric("Search mode", status.search_mode or "—")
    c[4].metric("Up to date", "no" if status.dirty else "yes",
                help="Files changed since the last sync (mtime or size differ)."
                if status.dirty else "Files and index agree.")
    if model:
        st.caption(f"Model: `{model}` · profile `{status.profile}` · chunking "
                   f"{status.chunking.mode} {status.chunking.tokens} tokens, "
                   f"overlap {status.chunking.overlap}")

    fb = status.fallback
    if fb:
        st.warning(f"Embedding provider fell back from **{fb.from_provider}**: {fb.reason}")
    ident = status.identity
    if ident is not None and ident.status == "mismatch":
        st.warning(f"The index was built with other settings ({ident.reason}): "
                   "Index now rebuilds it.")


def _sources_table(status: Status) -> None:
    """Chunks per source, and the sources the configuration names."""
    st.subheader("Sources")
    counts = [c.to_json() for c in status.source_counts]
    if counts:
        st.dataframe(pd.DataFrame(counts), hide_index=True, width="stretch")
    else:
        st.caption("Nothing indexed yet.")
    extra = status.extra_paths
    st.caption(f"Configured sources: {', '.join(status.sources)}"
               + (f"; extra paths: {', '.join(extra)}" if extra else ""))


def _search_legs(key: state.IndexKey, status: Status) -> None:
    """Which search legs answer (keyword, vector) and why not, and how much of the chunks the
    model truncates."""
    st.subheader("Search legs")
    fts, vec = status.fts, status.vector
    if fts is None:  # not read yet: nothing is known of the legs but what is asked for
        st.markdown(f"Known once indexed (provider requested: "
                    f"`{status.requested_provider}`).")
    else:
        st.markdown(
            f"- Keyword (FTS5): {_yes(fts.available)}"
            + (f" — {fts.error}" if fts.error else "") + "\n"
            f"- Vector: {_yes(vec and vec.enabled)} "
            + (f"({vec.dims} dims, search via {vec.search})"
               if vec and vec.enabled else "(no embedding provider: keyword only)")
            + (f" — sqlite-vec: {vec.load_error}" if vec and vec.load_error else ""))
    if status.indexed and status.provider not in (None, "", "none"):
        tr = _truncation(key)
        if tr.available:
            st.metric("Chunks the model truncates", f"{tr.share:.0%}",
                      help=f"{tr.truncated} of {tr.chunks} chunks lose text to the model "
                           f"({tr.max_seq_length} tokens a read; mean "
                           f"{tr.mean_tokens:.0f}); {tr.windowed} longer ones are embedded "
                           "in windows the model reads whole, and pooled.")


def _status_warnings(status: Status) -> None:
    """The index's warnings, the files' and the skipped transcript lines, in one expander."""
    warnings = list(status.warnings)
    warnings += [f"{p}: {w}" for p, w in status.file_warnings.items()]
    if status.bad_jsonl_lines:
        warnings.append(f"{status.bad_jsonl_lines} malformed transcript line(s) skipped")
    if warnings:
        with st.expander(f"Warnings ({len(warnings)})"):
            for w in warnings:
                st.markdown(f"- {w}")


def _page_links(status: Status) -> None:
    """Links to the other pages, each with what it is for, and the full status as JSON."""
    st.subheader("Pages")
    cols = st.columns(len(PAGES_INFO))
    for col, (path, title, icon, _, desc) in zip(cols, PAGES_INFO, strict=True):
        with col:
            st.page_link(path, label=title, icon=icon)
            st.caption(desc)
    with st.expander("Full status"):
        st.json(status.to_json())


def _warm(key: state.IndexKey, boot: Any) -> None:
    """The first run of a browser session: load the embedding model where everyone can see it
    happen, instead of a blank page while the first query or the truncation count loads it."""
    idx = state.open_index(key)
    with boot.container():
        with st.status("Getting the workbench ready…", expanded=True) as box:
            st.write(f"Opened `{idx.workspace}` (index `{idx.store_path.name}`).")
            if idx.choice.provider is not None:
                st.write(f"Loading the embedding model ({idx.choice.model})…")
                idx.embed_query("warm-up")
                st.write("Model loaded.")
            if not idx.readonly:
                # here, before the watcher starts, with n of N and the time so far: the
                # watcher's own start-up sync has no progress to show, and a first build
                # takes minutes on a busy machine (a blank page for 127 s, issue #35)
                st.write("Bringing the index up to date (the first visit builds it)…")
                state.ensure_indexed(key)
            st.write("Starting UMAP's compiler in the background (the map uses PCA meanwhile).")
            projection.warm_up()
            box.update(label="Ready", state="complete", expanded=False)
    st.session_state["wb_warm"] = True


nav = st.navigation(
    [st.Page(home, title="Home", icon=":material/home:", default=True)]
    + [st.Page(path, title=title, icon=icon, url_path=url) for path, title, icon, url, _
       in PAGES_INFO])
key0 = state.workspace_picker()
if not st.session_state.get("wb_warm"):
    _warm(key0, boot)
boot.empty()
live.follow(key0, auto_refresh=nav.url_path in live.AUTO_REFRESH)
nav.run()
