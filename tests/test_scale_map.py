"""The Embedding map at scale (issue #10 item 7): a fixed sample, the query's hits always drawn.

Real index of the demo workspace with the local model; ``MAX_POINTS`` lowered to 10 so that
the 40 demo chunks are sampled as 133k would be.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memory_core import MemoryIndex
from workbench import mapdata
from workbench.testing import OpenApp


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
def test_hits_outside_the_sample_are_drawn(open_app: OpenApp, module_demo: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mapdata, "MAX_POINTS", 10)
    at = open_app(module_demo, "pages/embedding_map.py", provider="local", timeout=240)
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
