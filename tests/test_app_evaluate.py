"""AppTest of the Evaluate page on the demo's labelled queries (and without the API)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from workbench import optional
from workbench.testing import APP, copy_demo, workbench_env


@pytest.fixture
def at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    demo = copy_demo(tmp_path)
    for k, v in workbench_env(demo, tmp_path / "cache").items():
        monkeypatch.setenv(k, v)
    app = AppTest.from_file(str(APP), default_timeout=300).run()
    app.switch_page("pages/evaluate.py").run()
    assert not app.exception
    return app


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


def test_page_says_plainly_when_the_api_is_missing(at: AppTest,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(optional, "evaluation",
                        lambda: (None, "`memory_core.evaluation` is not available yet."))
    at.run()
    assert not at.exception
    assert any("not available yet" in w.value for w in at.warning)
