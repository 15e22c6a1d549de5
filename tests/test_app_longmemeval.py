"""AppTest of the Evaluate page's LongMemEval-S block on a three-question file in the official
format (the real development half takes minutes a question; the block's logic is the same)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.apptesting import OpenApp
from tests.test_longmemeval import _instance


def test_the_evaluate_page_runs_longmemeval_and_shows_the_session_figures(
        open_app: OpenApp, demo_ws: Path, tmp_path: Path) -> None:
    data = tmp_path / "datasets"
    (data / "longmemeval-s").mkdir(parents=True)
    with gzip.open(data / "longmemeval-s" / "longmemeval_s_dev.json.gz", "wt") as f:
        json.dump([_instance("q1", "single-session-user", "user"),
                   _instance("q2", "single-session-assistant", "assistant"),
                   _instance("q3_abs", "single-session-user", None)], f)
    at = open_app(demo_ws, "pages/evaluate.py", datasets=data, timeout=600)
    at.button(key="lme_run").click().run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "recall_any@5" in d.value.columns)
    assert list(table["run"]) == ["default ranked (gate off, 50)", "default agent (its settings)"]
    assert list(table["questions"]) == [1, 1]  # q2's answer is the assistant's: skipped
    assert table["recall_any@5"].iloc[0] == 1.0
    assert list(table["abstention questions"]) == [1, 1]
