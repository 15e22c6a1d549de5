"""Embedding map: every chunk embedding in 2-D (or 3-D), the query and its hits on top, and the
chunks of a box or lasso selection listed below."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from memory_core import MemoryIndex
from workbench import charts, mapdata, projection, state

key = state.current_key()
st.title("Embedding map")
idx = state.ensure_indexed(key)
st.caption(key.label())

points = mapdata.load_points(idx, mapdata.MAX_POINTS)
if len(points) == 0:
    st.info("This index has no embeddings (keyword-only, provider “none”). Pick an embedding "
            "provider in the sidebar to see the map.")
    st.stop()
ids, matrix, fp = points.ids, points.matrix, points.fingerprint
info, pos = points.info, points.position

c1, c2, c3, c4, c5 = st.columns([1.2, 0.6, 1.1, 1.3, 1.3])
method = c1.radio("Projection", ["UMAP", "PCA"], key="map_method", horizontal=True,
                  help="UMAP keeps neighbourhoods; PCA is instant and linear.")
dims = 3 if c2.toggle("3-D", key="map_3d") else 2
colour = c3.selectbox("Colour by", ["file", "source", "date", "cluster"], key="map_colour")
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

query = st.text_input("Query to project", value=state.shared_query(), key="map_query",
                      placeholder="e.g. why did our hosting spend increase?")
state.set_shared_query(query)
hits: list[Any] = []
qpoint = None
if query.strip():
    settings = state.tuned_settings(key)
    cands = state.get_candidates(key, query, settings)
    hits = MemoryIndex.fuse(cands, settings).hits
    qvec = idx.embed_query(query)
    if qvec is not None:
        if used == "PCA":
            qpoint = pca_model.transform(np.asarray(qvec))[0]
        else:
            qpoint = projection.place_query(qvec, matrix, coords)

# ----------------------------------------------------------------------------- the figure

if colour == "cluster":
    info["cluster"] = [f"cluster {c + 1}" for c in projection.kmeans_labels(matrix, n_clusters)]
column = {"file": "path"}.get(colour, colour)
groups = sorted(info[column].unique())
palette = (["#4C78A8", "#F58518", "#E45756", "#72B7B2", "#54A24B", "#EECA3B", "#B279A2",
            "#FF9DA6", "#9D755D", "#BAB0AC"] * 20)
fig = go.Figure()
Scatter = go.Scatter3d if dims == 3 else go.Scatter
for gi, g in enumerate(groups):
    sel = info.index[info[column] == g].to_numpy()
    xyz = {"x": coords[sel, 0], "y": coords[sel, 1]}
    if dims == 3:
        xyz["z"] = coords[sel, 2]
    fig.add_trace(Scatter(
        **xyz, mode="markers", name=str(g)[:40],
        marker={"size": 6 if dims == 3 else 9, "color": palette[gi], "opacity": 0.8},
        customdata=[[info.at[i, "id"], f"{info.at[i, 'path']}#{info.at[i, 'lines']}",
                     charts.wrap(info.at[i, "snippet"], 60, 6)] for i in sel],
        hovertemplate="<b>%{customdata[1]}</b><br>%{customdata[2]}<extra></extra>"))
LEG_SYMBOL = {"both": "star", "vector": "diamond", "keyword": "square"}
LEG_LABEL = {"both": "hit: both legs", "vector": "hit: vector leg", "keyword": "hit: keyword leg"}


def _hit_xy(cid: str) -> np.ndarray | None:
    """A hit's map position: its point, or (a sampled map left it out) placed like the query."""
    if cid in pos:
        return coords[pos[cid]]
    vec = points.vector_of(cid)
    if vec is None:
        return None
    if used == "PCA":
        return pca_model.transform(np.asarray(vec))[0]
    return projection.place_query(vec, matrix, coords)


hit_xy = {h.id: xy for h in hits if (xy := _hit_xy(h.id)) is not None}
for via in ("both", "vector", "keyword"):
    hs = [(r, h) for r, h in enumerate(hits, 1) if h.via == via and h.id in hit_xy]
    if not hs:
        continue
    pts_xy = np.array([hit_xy[h.id] for _, h in hs])
    xyz = {"x": pts_xy[:, 0], "y": pts_xy[:, 1]}
    if dims == 3:
        xyz["z"] = pts_xy[:, 2]
    fig.add_trace(Scatter(
        **xyz, mode="markers+text", name=LEG_LABEL[via], text=[f"{r}" for r, _ in hs],
        textposition="top center",
        marker={"symbol": LEG_SYMBOL[via] if dims == 2 else "diamond", "size": 18 if dims == 2
                else 8, "color": "rgba(0,0,0,0)", "line": {"color": "#111", "width": 2}},
        customdata=[[h.id, h.citation, charts.wrap(h.snippet, 60, 6)] for _, h in hs],
        hovertemplate="<b>hit %{text}: %{customdata[1]}</b><br>%{customdata[2]}<extra></extra>"))
if qpoint is not None:
    xyz = {"x": [qpoint[0]], "y": [qpoint[1]]}
    if dims == 3:
        xyz["z"] = [qpoint[2]]
    fig.add_trace(Scatter(
        **xyz, mode="markers+text", name="query", text=["query"], textposition="bottom center",
        marker={"symbol": "x", "size": 16 if dims == 2 else 8, "color": "#d62728"},
        hovertemplate=f"<b>query</b><br>{charts.wrap(query, 60, 3)}<extra></extra>"))
fig.update_layout(
    height=640, font={"family": charts.FONT}, dragmode="lasso" if dims == 2 else "orbit",
    legend={"itemsizing": "constant"}, margin={"l": 10, "r": 10, "t": 40, "b": 10},
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
if used == "UMAP" and qpoint is not None:
    st.caption("The query sits at the similarity-weighted mean of its 5 nearest chunks (UMAP "
               "has no exact inverse for a new point).")

# ----------------------------------------------------------------------------- selection

chosen = mapdata.selected_ids(event, pos)
if chosen:
    st.subheader(f"{len(chosen)} selected chunk(s)")
    sel_df = info.set_index("id").loc[chosen, ["path", "lines", "source", "date", "snippet"]]
    sel_df["snippet"] = sel_df["snippet"].map(lambda t: " ".join(t.split())[:160])
    st.dataframe(sel_df.reset_index(drop=True), hide_index=True, width="stretch",
                 key="map_selected")
else:
    st.caption("Drag a box or a lasso on the map (or click a point) to list chunks here.")
