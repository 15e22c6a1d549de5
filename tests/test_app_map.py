"""AppTest of the Embedding map: projection, colouring, the query and its hits, selection; and
the UMAP worker that compiles in the background."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryIndex
from tests.apptesting import OpenApp
from workbench import mapdata, projection

PAGE = "pages/embedding_map.py"


@pytest.fixture(scope="module")
def map_demo(indexed_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo copy shared by the module, holding the demo's local-model index (conftest's
    ``indexed_demo``, built once a run): the map reads it, as it reads any index already
    built, instead of the page embedding the demo again (~9 CPU s). Building through the
    pages is tested elsewhere (test_app_heap with the local model, the keyword-only test
    below)."""
    ws = tmp_path_factory.mktemp("map") / "demo-workspace"
    shutil.copytree(indexed_demo, ws)
    return ws


def _values(v: object) -> list[float]:
    """A plotly array as numbers: plotly ships numpy arrays as typed base64 (``bdata``)."""
    if isinstance(v, dict) and "bdata" in v:
        import base64

        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist()
    return list(v)  # type: ignore[call-overload]


def _figure(at: AppTest) -> dict:
    chart = next(c for c in at.get("plotly_chart") if c.key in ("map_chart", "map_chart3d"))
    return json.loads(chart.proto.spec)


def test_keyword_only_index_has_no_map(open_app: OpenApp, map_demo: Path) -> None:
    at = open_app(map_demo, PAGE, provider="none", timeout=240)
    assert any("no embeddings" in i.value for i in at.info)


@pytest.mark.slow  # loads the local model: ~20 s
def test_map_projects_chunks_query_hits_and_lists_a_selection(
        open_app: OpenApp, map_demo: Path) -> None:
    at = open_app(map_demo, PAGE, provider="local", timeout=240)
    at.radio(key="map_method").set_value("PCA").run()
    fig = _figure(at)
    points = [p for t in fig["data"] for p in t["customdata"]]
    assert len(points) == 40 and "PCA of 40 chunk embeddings" in fig["layout"]["title"]["text"]
    # colour by kind (the default): what a reader calls the files, each its own colour
    kinds = {t["name"]: t["marker"]["color"] for t in fig["data"]}
    assert set(kinds) == {"MEMORY.md", "diary", "note", "transcript"}
    assert len(set(kinds.values())) == 4
    # colour by file: no two files share a colour
    at.selectbox(key="map_colour").set_value("file").run()
    files = {t["name"]: t["marker"]["color"] for t in _figure(at)["data"]}
    assert "MEMORY.md" in files and "memory/2026-10-20.md" in files
    assert len(set(files.values())) == len(files)
    # colour by source: one trace per source
    at.selectbox(key="map_colour").set_value("source").run()
    assert {t["name"] for t in _figure(at)["data"]} == {"memory", "sessions"}
    # colour by date: one continuous scale (a legend entry per day repeated its colours)
    at.selectbox(key="map_colour").set_value("date").run()
    dated = next(t for t in _figure(at)["data"] if t["name"] == "dated")
    assert dated["marker"]["showscale"] and len(dated["marker"]["colorbar"]["ticktext"]) >= 2
    assert {t["name"] for t in _figure(at)["data"]} <= {"dated", "undated"}
    # colour by cluster: k traces, each named by its words
    at.selectbox(key="map_colour").set_value("cluster").run()
    at.slider(key="map_k").set_value(4).run()
    names = [t["name"] for t in _figure(at)["data"]]
    assert sorted(n.split(":")[0] for n in names) == ["1", "2", "3", "4"]
    assert all(len(n.split(": ", 1)[1]) > 3 for n in names)
    # a query is projected and its hits are marked by leg
    at.text_input(key="map_query").input("who is on call right now?").run()
    assert not at.exception
    names = {t["name"] for t in _figure(at)["data"]}
    assert "query" in names and names & {"hit: both legs", "hit: vector leg",
                                          "hit: keyword leg"}
    assert not any("No hit for this query" in i.value for i in at.info)
    at.text_input(key="map_query").input("qqzzxv wqpfk").run()  # nothing answers this
    assert any("No hit for this query" in i.value for i in at.info)
    at.text_input(key="map_query").input("who is on call right now?").run()
    # colour by similarity: one continuous trace, every point's cosine to the query
    at.selectbox(key="map_colour").set_value("similarity to query").run()
    sim = next(t for t in _figure(at)["data"] if t["name"] == "cosine to the query")
    cosines = _values(sim["marker"]["color"])
    assert len(cosines) == 40 and max(cosines) <= 1.0 + 1e-6
    # colour by rank: the hits carry their rank, the rest are grey
    at.selectbox(key="map_colour").set_value("rank").run()
    ranked = next(t for t in _figure(at)["data"] if t["name"] == "hits by rank")
    assert sorted(_values(ranked["marker"]["color"])) == list(range(1, len(_values(ranked["x"]))
                                                                     + 1))
    # a term's neighbours are ringed
    at.text_input(key="map_term").input("invoice").run()
    assert not at.exception
    near = next(t for t in _figure(at)["data"] if t["name"].startswith("near "))
    assert len(_values(near["x"])) == 10
    # a lasso/box selection (plotly's selection event) lists the chunks it holds
    first = _figure(at)["data"][0]["customdata"][:2]
    at.session_state["map_chart"] = {"selection": {
        "points": [{"customdata": cd} for cd in first], "point_indices": [0, 1],
        "box": [], "lasso": [{"x": [0, 1, 1], "y": [0, 0, 1]}]}}
    at.run()
    assert not at.exception
    assert any(s.value == "2 selected chunk(s)" for s in at.subheader)
    listed = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert [f"{r.path}#{r.lines}" for r in listed.itertuples()] == [cd[1] for cd in first]
    # 3-D
    at.toggle(key="map_3d").set_value(True).run()
    fig = _figure(at)
    assert fig["data"][0]["type"] == "scatter3d" and "z" in fig["data"][0]


def test_pca_coordinates_are_cached_per_fingerprint(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path))
    rng = np.random.default_rng(1)
    m = rng.normal(size=(30, 16)).astype(np.float32)
    fp = projection.fingerprint([f"c{i}" for i in range(30)], 16)
    coords, model = projection.pca_cached(m, fp, 2)
    assert coords.shape == (30, 2)
    assert np.allclose(model.transform(m[3])[0], coords[3], atol=1e-4)
    again, _ = projection.pca_cached(m * 0, fp, 2)  # same fingerprint: read from disk
    assert np.array_equal(again, coords)
    assert projection.fingerprint([f"c{i}" for i in range(29)], 16) != fp
    q = projection.place_query(m[5], m / np.linalg.norm(m, axis=1, keepdims=True), coords, k=1)
    assert np.allclose(q, coords[5])


@pytest.mark.umap
@pytest.mark.slow
def test_umap_worker_compiles_in_the_background_then_projects(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path))
    monkeypatch.delenv("MEMORY_WORKBENCH_NO_UMAP", raising=False)
    rng = np.random.default_rng(2)
    m = rng.normal(size=(50, 24)).astype(np.float32)
    fp = projection.fingerprint([f"u{i}" for i in range(50)], 24)
    try:
        first = projection.umap_coords(m, fp, 2, 10)
        assert first.coords is None and first.state in ("warming", "fitting")  # never blocks
        deadline = time.monotonic() + 420
        status = first
        while status.coords is None and time.monotonic() < deadline:
            assert status.state in ("warming", "fitting"), status.error
            time.sleep(2)
            status = projection.umap_coords(m, fp, 2, 10)
        assert status.coords is not None and status.coords.shape == (50, 2)
        assert projection.umap_path(fp, 2, 10).is_file()  # cached on disk for next time
    finally:
        projection.WORKER.stop()


def test_points_align_each_embedding_with_its_chunk(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        pts = mapdata.load_points(idx)
        ids, matrix = idx.embeddings()
        rows = {c.id: c for c in idx.chunks()}
    assert len(pts) == len(rows) == 40 and pts.matrix.shape[1] == matrix.shape[1]
    assert list(pts.info.columns) == mapdata.INFO_COLUMNS
    for i, cid in enumerate(pts.ids):
        assert pts.position[cid] == i
        assert (pts.info.at[i, "id"], pts.info.at[i, "path"]) == (cid, rows[cid].path)
        assert np.allclose(pts.matrix[i], matrix[ids.index(cid)])
    diary = pts.info[pts.info["path"] == "memory/2026-10-20.md"]
    assert set(diary["date"]) == {"2026-10-20"}
    # a selection event lists known chunk ids once each, in order; the query marker is ignored
    a, b = pts.ids[3], pts.ids[1]
    event = {"selection": {"points": [{"customdata": [a, "x"]}, {"customdata": ["query"]},
                                      {"customdata": [b]}, {"customdata": [a]}, {}]}}
    assert mapdata.selected_ids(event, pts.position) == [a, b]
    assert mapdata.selected_ids(None, pts.position) == []


def test_chunk_date_from_the_file_name_never_its_mtime() -> None:
    assert projection.chunk_date("memory/2026-10-20.md") == "2026-10-20"
    assert projection.chunk_date("sessions/2023-05-08-chat.jsonl") == "2023-05-08"
    assert projection.chunk_date("memory/2026-13-45.md") == "undated"  # not a date
    assert projection.chunk_date("MEMORY.md") == "undated"
    assert projection.chunk_date("notes/crawler.md") == "undated"


@pytest.mark.slow  # loads the local model: ~20 s
def test_map_gold_of_a_labelled_query_and_a_clicked_point(open_app: OpenApp,
                                                          map_demo: Path) -> None:
    at = open_app(map_demo, PAGE, provider="local", timeout=240)
    at.radio(key="map_method").set_value("PCA").run()
    options = at.selectbox(key="map_labelled").options
    pick = next(o for o in options if "COOKIE_EXPIRED" in o)
    at.selectbox(key="map_labelled").set_value(pick).run()
    assert at.text_input(key="map_query").value == "COOKIE_EXPIRED"
    at.selectbox(key="map_colour").set_value("gold").run()
    assert not at.exception
    groups = {t["name"]: len(_values(t["x"])) for t in _figure(at)["data"]}
    assert groups.get("gold, found", 0) >= 1  # the evidence chunk is among the hits
    gold_ids = [cd[0] for t in _figure(at)["data"] if t["name"] == "gold, found"
                for cd in t["customdata"]]
    # clicking one point opens that chunk with its nearest neighbours
    at.session_state["map_chart"] = {"selection": {
        "points": [{"customdata": [gold_ids[0], "", ""]}], "point_indices": [0],
        "box": [], "lasso": []}}
    at.run()
    assert not at.exception
    assert any(s.value.startswith("memory/2026-11-03.md#L") for s in at.subheader)
    assert any("COOKIE_EXPIRED" in t.value for t in at.text)
    nn = next(d.value for d in at.dataframe if "cosine" in d.value.columns)
    assert len(nn) == 8 and list(nn["cosine"]) == sorted(nn["cosine"], reverse=True)


def test_map_layers_are_pure_and_name_what_they_show() -> None:
    from workbench import maplayers

    assert maplayers.chunk_kind("MEMORY.md", "memory") == "MEMORY.md"
    assert maplayers.chunk_kind("memory/2026-10-20.md", "memory") == "diary"
    assert maplayers.chunk_kind("notes/crawler.md", "memory") == "note"
    assert maplayers.chunk_kind("memory/ideas.md", "memory") == "note"
    assert maplayers.chunk_kind("sessions/a.jsonl", "sessions") == "transcript"
    groups = [f"f{i}" for i in range(30) for _ in range(30 - i)]
    labels, colours = maplayers.group_colours(groups, top=16)
    assert len(set(labels)) == 17 and "other files" in labels
    assert len(set(colours.values())) == len(colours) == 17
    names = maplayers.cluster_names([0, 0, 1, 1], ["invoice paid invoice", "invoice late",
                                                   "crawler proxy", "proxy pool crawler"])
    assert "invoice" in names[0] and "proxy" in names[1]
    m = np.eye(4, dtype=np.float32)
    assert [i for i, _ in maplayers.nearest(m, m[2], 2, skip=2)] == [0, 1]
    assert maplayers.covers("a.md", 3, 9, [("a.md", 5)])
    assert not maplayers.covers("a.md", 3, 9, [("a.md", 10), ("b.md", 5)])
    assert maplayers.covers("a.md", 3, 9, [("a.md", None)])
    assert maplayers.gold_groups(["a", "b", "c", "d"], {"a", "b"}, ["a", "c"]) == [
        "gold, found", "gold, missed", "hit, not gold", "other"]
    from memory_core.base.supersession import Supersession

    rows = [Supersession("d1.md", 3, "d2.md", 5, "vendor"),
            Supersession("d1.md", 8, "d3.md", 2, "port")]
    chunks = [("a", "d1.md", 1, 4), ("b", "d2.md", 1, 9), ("c", "d1.md", 10, 12),
              ("d", "d3.md", 1, 3), ("e", "d1.md", 7, 9)]
    assert maplayers.supersession_groups(rows, chunks) == (
        ["superseded", "current", "unchanged", "current", "superseded"],
        ["d2.md#L5", "", "", "", "d3.md#L2"])


@pytest.mark.slow  # loads the local model: ~20 s
def test_map_colours_by_supersession_and_names_the_newer_line(
        open_app: OpenApp, map_demo: Path, tmp_path: Path) -> None:
    """Issue #34: the map colours each chunk superseded, current or unchanged, as
    ``chunk_marks`` marks it over the stored supersessions, and a superseded point's hover
    names the newer line."""
    from memory_core.base.supersession import chunk_marks
    from tests.apptesting import copy_demo

    at = open_app(map_demo, PAGE, provider="local", timeout=240)
    at.radio(key="map_method").set_value("PCA").run()
    assert "supersession" in at.selectbox(key="map_colour").options
    at.selectbox(key="map_colour").set_value("supersession").run()
    assert not at.exception
    traces = {t["name"]: t for t in _figure(at)["data"]}
    assert set(traces) == {"superseded", "current", "unchanged"}
    # what the engine marks over the stored rows (a keyword-only copy: the same text, so the
    # same chunks and supersessions) for the chunks the map draws
    with MemoryIndex.open(copy_demo(tmp_path), provider="none") as idx:
        idx.sync()
        rows = idx.supersessions()
    drawn = []
    for t in traces.values():
        for cd in t["customdata"]:
            path, lines = cd[1].rsplit("#L", 1)
            start, end = lines.split("–L")
            drawn.append((cd[0], path, int(start), int(end)))
    marks = chunk_marks(rows, drawn)
    assert len(drawn) == 40 and len(rows) == 7
    counts = {name: len(t["customdata"]) for name, t in traces.items()}
    assert counts == {"superseded": len(marks.superseded), "current": len(marks.current),
                      "unchanged": 40 - len(marks.superseded) - len(marks.current)}
    assert counts["superseded"] == 4 and counts["current"] == 4
    assert {cd[0] for cd in traces["current"]["customdata"]} == marks.current
    sup = traces["superseded"]
    assert "superseded by %{customdata[3]}" in sup["hovertemplate"]
    assert {cd[0]: cd[3] for cd in sup["customdata"]} == marks.superseded
    # the on-call line of 2026-11-06 was superseded by the rotation of 2026-11-24
    assert "memory/2026-11-24.md#L4" in {cd[3] for cd in sup["customdata"]}
    assert "superseded by" not in traces["unchanged"]["hovertemplate"]
