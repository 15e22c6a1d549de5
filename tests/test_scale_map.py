"""The Embedding map at scale (issue #10 item 7): a fixed sample, the query's hits always drawn.

Real index of the demo workspace with the local model; ``MAX_POINTS`` lowered to 10 so that
the 40 demo chunks are sampled as 133k would be. The sample is read on its own
(``MemoryIndex.embedding_sample``, issue #26 item 1: never every vector), once per index
generation for the server.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from tests.apptesting import OpenApp
from workbench import mapdata


def test_sample_is_fixed_and_every_vector_stays_reachable(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        pts = mapdata.load_points(idx, max_points=10)
        again = mapdata.load_points(idx, max_points=10)
        ids, matrix = idx.embeddings()
        whole = mapdata.load_points(idx)
    assert len(pts) == 10 and pts.total == 40 and pts.sampled and not whole.sampled
    assert pts.ids == again.ids and pts.fingerprint == again.fingerprint  # same fit, same cache
    assert len(whole) == whole.total == 40
    for cid in ids:  # drawn or not, each chunk's vector is found
        v = pts.vector_of(cid)
        assert v is not None and np.allclose(v, matrix[ids.index(cid)])
    for i, cid in enumerate(pts.ids):
        assert pts.info.at[i, "id"] == cid and np.allclose(pts.matrix[i], pts.vector_of(cid))


@pytest.mark.slow  # loads the local model
def test_hits_outside_the_sample_are_drawn(open_app: OpenApp, indexed_demo_copy: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mapdata, "MAX_POINTS", 10)
    # the app finds the copy's index up to date (the map draws it; tests/test_app_map.py
    # has the app build one itself)
    at = open_app(indexed_demo_copy, "pages/embedding_map.py", provider="local", timeout=240)
    at.radio(key="map_method").set_value("PCA").run()
    at.text_input(key="map_query").input("who is on call right now?").run()
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if c.key == "map_chart")
    fig = json.loads(chart.proto.spec)
    assert "a sample of 40" in fig["layout"]["title"]["text"]
    drawn = [t for t in fig["data"] if not t["name"].startswith(("hit", "query"))]
    assert sum(len(t["customdata"]) for t in drawn) == 10
    hits = [cd[0] for t in fig["data"] if t["name"].startswith("hit") for cd in t["customdata"]]
    sample = {cd[0] for t in drawn for cd in t["customdata"]}
    assert len(hits) >= 5 and set(hits) - sample  # hits the sample left out are on the map


def test_the_sample_is_the_full_reads_sample_with_or_without_the_sidecar(
        indexed_demo_copy: Path) -> None:
    with MemoryIndex.open(indexed_demo_copy) as idx:
        assert not idx.sync().files_indexed  # the copy's index is the sync's
        ids, matrix = idx.embeddings()
        pick = np.sort(np.random.default_rng(0).choice(len(ids), 10, replace=False))
        sample = idx.embedding_sample(10)
        assert sample.total == len(ids) == 40
        assert sample.ids == [ids[i] for i in pick]
        assert np.array_equal(sample.matrix, matrix[pick])
        whole = idx.embedding_sample(1000)
        assert whole.ids == ids and np.array_equal(whole.matrix, matrix)
        sidecar = idx.store_path.with_name(idx.store_path.name + ".vectors")
        assert sidecar.is_file()
        idx.close()
        sidecar.unlink()  # a stale or missing sidecar: the rowids from one scan instead
        again = idx.embedding_sample(10)
        assert again.ids == sample.ids and np.array_equal(again.matrix, sample.matrix)
        hits = idx.embeddings_of([ids[0], ids[5], "no-such-chunk"])
        assert set(hits) == {ids[0], ids[5]} and np.array_equal(hits[ids[5]], matrix[5])


def test_map_points_are_read_once_per_generation(indexed_demo_copy: Path) -> None:
    demo_ws = indexed_demo_copy
    with MemoryIndex.open(demo_ws) as idx:
        assert not idx.sync().files_indexed  # the copy's index is the sync's
        first = mapdata.cached_points(idx, 10)
        assert mapdata.cached_points(idx, 10) is first and first.sampled and len(first) == 10
        assert first.custom.shape == (10, 3) and list(first.custom[:, 0]) == first.ids
        left_out = next(c for c in idx.embeddings()[0] if c not in first.position)
        assert first.vector_of(left_out) is not None  # read on demand, not kept whole
        (demo_ws / "memory" / "2026-12-01.md").write_text(
            "# 2026-12-01\n\nThe heat pump was serviced today.\n", encoding="utf-8")
        idx.sync()
        second = mapdata.cached_points(idx, 10)
        assert second is not first and second.total == first.total + 1
