"""Embedding map: every chunk embedding in 2-D (or 3-D), the query and its hits on top, and the
chunks of a box or lasso selection listed below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from memory_core import MemoryIndex
from workbench import charts, mapdata, maplayers, projection, state

key = state.current_key()
st.title("Embedding map")
idx = state.ensure_indexed(key)
st.caption(key.label())

bar, progress = state.progress_bar("Reading the map's points")  # once per index generation
points = mapdata.cached_points(idx, mapdata.MAX_POINTS,
                               lambda done, total: progress("embeddings", done, total))
bar.empty()
if len(points) == 0:
    st.info("This index has no embeddings (keyword-only, provider “none”). Pick an embedding "
            "provider in the sidebar to see the map.")
    st.stop()
ids, matrix, fp = points.ids, points.matrix, points.fingerprint
info, pos = points.info.copy(), points.position  # shared by all sessions: colourings add columns

c1, c2, c3, c4, c5 = st.columns([1.2, 0.6, 1.1, 1.3, 1.3])
method = c1.radio("Projection", ["UMAP", "PCA"], key="map_method", horizontal=True,
                  help="UMAP keeps neighbourhoods; PCA is instant and linear.")
dims = 3 if c2.toggle("3-D", key="map_3d") else 2
COLOURINGS = ["kind", "file", "source", "date", "cluster", "supersession", "similarity to query",
              "rank", "leg", "gold"]
colour = c3.selectbox("Colour by", COLOURINGS, key="map_colour",
                      help="kind: MEMORY.md, diary, note, transcript. supersession: a chunk "
                           "a later line superseded, one holding the newer line (current), or "
                           "neither. similarity, rank, leg: "
                           "against the query below; gold: a labelled query's evidence chunks, "
                           "found or missed.")
n_clusters = 6
if colour == "cluster":
    n_clusters = c4.slider("Clusters (k-means)", 2, 16, 6, key="map_k")
n_neighbors = 15
if method == "UMAP":
    n_neighbors = c5.slider("UMAP neighbours", 2, 50, 15, key="map_nn",
                            help="Smaller: local detail; larger: global shape.")

# ----------------------------------------------------------------------------- coordinates

pca_coords, pca_model = projection.pca_cached(matrix, fp, dims)
coords, used = pca_coords, "PCA"
if method == "UMAP":
    status = projection.umap_coords(matrix, fp, dims, n_neighbors)
    if status.coords is not None:
        coords, used = status.coords, "UMAP"
    elif status.state in ("warming", "fitting"):

        @st.fragment(run_every=1.5)
        def _wait() -> None:
            s = projection.umap_coords(matrix, fp, dims, n_neighbors)
            if s.coords is not None:
                st.rerun()
            what = ("compiling UMAP in the background (first run only)" if s.state == "warming"
                    else f"fitting UMAP on {len(ids)} chunks")
            st.progress(min(0.97, s.elapsed / max(1.0, s.expected)),
                        text=f"{what}: {s.elapsed:.0f} s of ~{s.expected:.0f} s — showing "
                             "PCA meanwhile")

        _wait()
    elif status.state == "disabled":
        st.caption(f"{status.error}: showing PCA.")
    else:
        st.warning(f"UMAP unavailable ({status.error}); showing PCA.")

# ----------------------------------------------------------------------------- query and hits



@st.cache_data(ttl=60, show_spinner=False)
def _labelled(workspace: str) -> dict[str, Any]:
    """The workspace's labelled queries: reading every query set takes ~0.2 s, too much for
    each rerun of the map (a colour or slider change); a minute old is fresh enough."""
    return mapdata.labelled_queries(Path(workspace))


labelled = _labelled(str(idx.workspace))
qc1, qc2 = st.columns([1.3, 1])
pick = qc2.selectbox("…or a labelled query", ["(none)", *labelled], key="map_labelled",
                     help="From the query sets labelled against this workspace (its copy "
                          "too): colour by gold to see which evidence chunks were found.")
gold_query = labelled.get(pick)
if gold_query is not None and st.session_state.get("map_labelled_was") != pick:
    st.session_state["map_query"] = gold_query.query  # the text box follows the pick (once)
st.session_state["map_labelled_was"] = pick
query = qc1.text_input("Query to project", value=state.shared_query(), key="map_query",
                       placeholder="e.g. who is on call?")  # answers in both profiles
state.set_shared_query(query)


def _place(vec: Any) -> np.ndarray:
    """Where an embedding that is not a point of the map (the query, a hit a sample left out)
    lands: PCA's own projection, or UMAP's approximation (projection.place_query)."""
    if used == "PCA":
        return pca_model.transform(np.asarray(vec))[0]
    return projection.place_query(vec, matrix, coords)


hits: list[Any] = []
qpoint = None
qvec = None
if query.strip():
    settings = state.tuned_settings(key)
    hits = MemoryIndex.fuse(state.get_candidates(key, query, settings), settings).hits
    qvec = idx.embed_query(query)
    if qvec is not None:
        qpoint = _place(qvec)
gold: set[str] = set()
if gold_query is not None and gold_query.query == query:
    evidence = [(e.path, e.line) for e in gold_query.relevant]
    gold = {row.id for row in info.itertuples()
            if maplayers.covers(row.path, row.start, row.end, evidence)}
term = st.text_input("Highlight the neighbours of a term", key="map_term",
                     placeholder="e.g. 连接池, invoice, on call",
                     help="The 10 chunks whose embeddings are closest to the term's are ringed.")
term_near: list[tuple[int, float]] = []
if term.strip():
    tvec = idx.embed_query(term)
    if tvec is not None:
        term_near = maplayers.nearest(matrix, np.asarray(tvec), 10)
needs_query = colour in ("similarity to query", "rank", "leg")
if needs_query and not hits and qvec is None:
    st.caption(f"Colour by {colour} needs a query: type one above.")
if colour == "gold" and gold_query is None:
    st.caption("Colour by gold needs a labelled query: pick one above.")

# ----------------------------------------------------------------------------- the figure

big = len(ids) > mapdata.WEBGL_ABOVE  # WebGL past a few thousand points; SVG stays clickable
Scatter: Any = go.Scatter3d if dims == 3 else (go.Scattergl if big else go.Scatter)
fig = go.Figure()


def _xyz(pts: np.ndarray) -> dict[str, Any]:
    """Plotly's x, y (and z) of ``pts``, one row of ``dims`` coordinates a point."""
    return dict(zip("xyz"[:dims], np.atleast_2d(pts).T, strict=True))


def _custom(sel: np.ndarray, extra: list[str] | None = None) -> np.ndarray:
    """The points' [id, citation, hover] (made once per map), with an extra column."""
    got = points.custom[np.asarray(sel, dtype=np.int64)]
    return got if extra is None else np.column_stack([got, np.array(extra, dtype=object)])


size = 6 if dims == 3 else (5 if big else 9)


def _points(sel: np.ndarray, name: str, marker: dict[str, Any], extra: list[str] | None = None,
            hover: str = "") -> None:
    """A trace of the map's points ``sel``; ``hover`` follows the citation in each hover box
    (``%{customdata[3]}`` is the point's ``extra``)."""
    fig.add_trace(Scatter(**_xyz(coords[sel]), mode="markers", name=name,
                          marker={"size": size, **marker}, customdata=_custom(sel, extra),
                          hovertemplate=f"<b>%{{customdata[1]}}</b>{hover}<br>%{{customdata[2]}}"
                                        "<extra></extra>"))


def _groups(column: str, colours: dict[str, str]) -> None:
    """One trace per value of ``info[column]``, in the legend order of the map's groups."""
    order = {g: i for i, g in enumerate([*maplayers.KINDS, *maplayers.LEG_GROUPS,
                                         *maplayers.GOLD_GROUPS, *maplayers.SUPERSESSION_GROUPS])}
    for g in sorted(info[column].unique(),
                    key=lambda g: (order.get(g, 99), g == "other files", str(g))):
        sel = info.index[info[column] == g].to_numpy()
        # a superseded point's hover names the newer line (its supersededBy)
        newer = column == "supersession" and g == "superseded"
        _points(sel, str(g)[:40], {"color": colours.get(g, maplayers.OTHER), "opacity": 0.85},
                list(info["superseded_by"].to_numpy()[sel]) if newer else None,
                " · superseded by %{customdata[3]}" if newer else "")


def _palette(groups: list[str]) -> dict[str, str]:
    return {g: maplayers.PALETTE[i % len(maplayers.PALETTE)] for i, g in enumerate(groups)}


if colour == "similarity to query" and qvec is not None:
    sims = maplayers.similarity(matrix, np.asarray(qvec))
    _points(np.arange(len(ids)), "cosine to the query",
            {"color": sims, "colorscale": "Viridis", "opacity": 0.85,
             "colorbar": {"title": "cosine"}, "showscale": True},
            [f"{v:.3f}" for v in sims], " · cosine %{customdata[3]}")
elif colour == "date":  # continuous: older → newer on one scale, undated in grey
    days, tickvals, ticktext = maplayers.date_scale(list(info["date"]))
    dated = np.flatnonzero(~np.isnan(days))
    undated = np.flatnonzero(np.isnan(days))
    if len(undated):
        _points(undated, "undated", {"color": "#BBBBBB", "opacity": 0.7}, hover=" · undated")
    _points(dated, "dated", {"color": days[dated], "colorscale": "Viridis", "opacity": 0.85,
                             "showscale": True, "colorbar": {"title": "date", "tickvals": tickvals,
                                                             "ticktext": ticktext}},
            [str(info["date"].iloc[i]) for i in dated], " · %{customdata[3]}")
elif colour == "rank" and hits:
    info["rank"] = maplayers.ranks(list(info["id"]), hits)
    ranked = info["rank"].notna().to_numpy()
    _points(np.flatnonzero(~ranked), "not a hit", {"color": "#DDDDDD", "opacity": 0.7})
    top = np.flatnonzero(ranked)
    _points(top, "hits by rank", {"size": size + 4, "color": info["rank"].to_numpy()[top],
                                  "colorscale": "Plasma_r", "showscale": True,
                                  "colorbar": {"title": "rank"}})
elif colour == "cluster":
    labels = projection.kmeans_labels(matrix, n_clusters)
    names = maplayers.cluster_names(labels, list(info["snippet"]))
    info["cluster"] = [names[int(c)] for c in labels]
    _groups("cluster", _palette(sorted(names.values())))
elif colour == "file":
    info["file"], file_colours = maplayers.group_colours(list(info["path"]))
    _groups("file", file_colours)
elif colour == "kind":
    _groups("kind", maplayers.KIND_COLOURS)
elif colour == "supersession":
    _groups("supersession", maplayers.SUPERSESSION_COLOURS)
elif colour in ("leg", "rank", "similarity to query"):  # rank without hits: the legs
    info["leg"] = maplayers.leg_groups(list(info["id"]), hits)
    _groups("leg", maplayers.LEG_COLOURS)
elif colour == "gold":
    info["gold"] = maplayers.gold_groups(list(info["id"]), gold, [h.id for h in hits])
    _groups("gold", maplayers.GOLD_COLOURS)
else:  # source: few groups, each its own colour
    _groups(colour, _palette(sorted(info[colour].unique())))
LEG_SYMBOL = {"both": "star", "vector": "diamond", "keyword": "square"}
#: Scatter3d has no star: one open symbol per leg there too (all legs were one diamond)
LEG_SYMBOL_3D = {"both": "circle-open", "vector": "diamond-open", "keyword": "square-open"}
LEG_LABEL = {"both": "hit: both legs", "vector": "hit: vector leg", "keyword": "hit: keyword leg"}


def _hit_xy(cid: str) -> np.ndarray | None:
    """A hit's map position: its point, or (a sampled map left it out) placed like the query."""
    if cid in pos:
        return coords[pos[cid]]
    vec = points.vector_of(cid)
    return None if vec is None else _place(vec)


hit_xy = {h.id: xy for h in hits if (xy := _hit_xy(h.id)) is not None}
for via in ("both", "vector", "keyword"):
    hs = [(r, h) for r, h in enumerate(hits, 1) if h.via == via and h.id in hit_xy]
    if not hs:
        continue
    fig.add_trace(Scatter(
        **_xyz(np.array([hit_xy[h.id] for _, h in hs])), mode="markers+text",
        name=LEG_LABEL[via], text=[f"{r}" for r, _ in hs], textposition="top center",
        marker={"symbol": (LEG_SYMBOL if dims == 2 else LEG_SYMBOL_3D)[via],
                "size": 18 if dims == 2
                else 8, "color": "rgba(0,0,0,0)", "line": {"color": "#111", "width": 2}},
        customdata=[[h.id, h.citation, charts.wrap(h.snippet, 60, 6)] for _, h in hs],
        hovertemplate="<b>hit %{text}: %{customdata[1]}</b><br>%{customdata[2]}<extra></extra>"))
if term_near:
    _points(np.array([i for i, _ in term_near]), f"near “{term.strip()[:20]}”",
            {"size": size + 8, "color": "rgba(0,0,0,0)",
             "symbol": "circle-open" if dims == 3 else "circle",
             "line": {"color": "#FB0D0D", "width": 2}},
            [f"{c:.3f}" for _, c in term_near], " · cosine %{customdata[3]}")
if qpoint is not None:
    fig.add_trace(Scatter(
        **_xyz(qpoint), mode="markers+text", name="query", text=["query"],
        textposition="bottom center",
        marker={"symbol": "x" if dims == 2 else "cross", "size": 16 if dims == 2 else 10,
                "color": "#d62728"},
        hovertemplate=f"<b>query</b><br>{charts.wrap(query, 60, 3)}<extra></extra>"))
fig.update_layout(
    # pan, not lasso, by default: Streamlit turns click-to-select off while a box or lasso tool
    # is active, and a click on a point is what opens a chunk
    height=640, font={"family": charts.FONT}, dragmode="pan" if dims == 2 else "orbit",
    # below the plot: at the right the legend ran over a colour bar's title
    legend={"itemsizing": "constant", "orientation": "h", "yanchor": "top", "y": -0.02},
    margin={"l": 10, "r": 10, "t": 40, "b": 10},
    title=f"{used} of {len(ids)} chunk embeddings ({matrix.shape[1]} dims), coloured by "
          f"{colour}" + (f" — a sample of {points.total:,}; the query's hits always drawn"
                         if points.sampled else ""))
if dims == 2:
    fig.update_xaxes(showticklabels=False, title=None)
    fig.update_yaxes(showticklabels=False, title=None)
    event = st.plotly_chart(fig, key="map_chart", on_select="rerun",
                            selection_mode=("box", "lasso", "points"))
else:
    st.plotly_chart(fig, key="map_chart3d")
    event = None
    st.caption("Selection works on the 2-D map (plotly has no box or lasso in 3-D).")
if query.strip() and not hits:  # an empty map of hits must not look like a broken one
    st.info("No hit for this query with the settings of Search & tune (nothing passes "
            "minScore, or the search abstained): the query is placed, no hit is marked.")
if used == "UMAP" and qpoint is not None:
    st.caption("The query sits at the similarity-weighted mean of its 5 nearest chunks (UMAP "
               "has no exact inverse for a new point).")

# ----------------------------------------------------------------------------- selection

chosen = mapdata.selected_ids(event, pos)
if len(chosen) == 1:  # a clicked point: the chunk itself and its nearest neighbours
    i = pos[chosen[0]]
    row = info.iloc[i]
    st.subheader(f"{row['path']}#{row['lines']}")
    st.caption(f"{row['kind']} · {row['source']} · {row['date']}")
    left, right = st.columns([3, 2])
    left.text(row["snippet"])
    right.markdown("**Nearest neighbours** (cosine of the embeddings)")
    nn = maplayers.nearest(matrix, matrix[i], 8, skip=i)
    right.dataframe(pd.DataFrame([{"chunk": f"{info.at[j, 'path']}#{info.at[j, 'lines']}",
                                   "cosine": round(c, 3)} for j, c in nn]),
                    hide_index=True, width="stretch", key="map_neighbours")
elif chosen:
    st.subheader(f"{len(chosen)} selected chunk(s)")
    sel_df = info.set_index("id").loc[chosen, ["path", "lines", "source", "date", "snippet"]]
    sel_df["snippet"] = sel_df["snippet"].map(lambda t: " ".join(t.split())[:160])
    st.dataframe(sel_df.reset_index(drop=True), hide_index=True, width="stretch",
                 key="map_selected")
else:
    st.caption("Click a point to open its chunk and its nearest neighbours here; pick the box "
               "or lasso tool (top right of the map) to list several.")
