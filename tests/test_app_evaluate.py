"""AppTest of the Evaluate page on the demo's labelled queries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptesting import OpenApp


@pytest.fixture
def at(open_app: OpenApp, demo_ws: Path) -> AppTest:
    return open_app(demo_ws, "pages/evaluate.py", timeout=300)


def _metric(at: AppTest, label: str) -> int:
    return int(next(m.value for m in at.metric if m.label == label))


def test_evaluation_reports_metrics_per_leg_and_wins_and_a_sweep(at: AppTest) -> None:
    assert at.selectbox(key="eval_set").value == "demo"
    assert at.radio(key="eval_target").value == "open"  # the open workspace is a demo copy
    at.radio(key="eval_b").set_value("reference").run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "ndcg@10" in d.value.columns)
    runs = list(table.index)
    assert runs[:3] == ["A: tuned", "B: reference profile", "vector leg"]
    assert len(runs) == 4 and runs[3].startswith("keyword leg")
    assert ((table["recall@5"] >= 0) & (table["recall@5"] <= 1)).all()
    assert table.loc["A: tuned", "success@10"] > 0
    assert table.loc["vector leg", "success@10"] == 0  # a keyword-only index
    wins_a, wins_b = _metric(at, "A: tuned wins"), _metric(at, "B: reference profile wins")
    ties = _metric(at, "Ties")
    assert wins_a + wins_b + ties == 27 and wins_a + wins_b > 0
    diffs = next(d.value for d in at.dataframe if "winner" in d.value.columns)
    assert len(diffs) == wins_a + wins_b
    # file level is a view of the same report
    at.radio(key="eval_level").set_value("file").run()
    assert "file level" in next(s.value for s in at.subheader if "Metrics" in s.value)
    # the sweep draws a vector weight × minScore heatmap
    at.button(key="eval_sweep").click().run()
    assert not at.exception
    chart = next(c for c in at.get("plotly_chart") if c.key == "eval_heatmap")
    spec = json.loads(chart.proto.spec)
    assert spec["data"][0]["type"] == "heatmap"
    assert len(spec["data"][0]["x"]) == 11 and len(spec["data"][0]["y"]) == 11
    assert any(c.value.startswith("Best success@5") for c in at.caption)
