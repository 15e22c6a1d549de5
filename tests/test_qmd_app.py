"""AppTest of the workbench's qmd views: the backend picker of Search & tune (qmd hits, the
fusion controls disabled with the reason, the fallback shown) and qmd in Evaluate."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core.backends import clear_open_failures, resolve_command
from tests.apptesting import OpenApp, copy_demo

pytestmark = pytest.mark.skipif(
    resolve_command("qmd") is None,
    reason="qmd not installed (run `bash scripts/install-node-tools.sh`; needs npm)")
SEARCH = "pages/search.py"


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_search_with_qmd(open_app: OpenApp, module_demo: Path) -> None:
    clear_open_failures()
    at = open_app(module_demo, SEARCH)
    at.text_input(key="search_query").input("database migration").run()
    assert not at.slider(key="t_vector_weight").disabled
    at.radio(key="search_backend").set_value("qmd").run()
    assert not at.exception, at.exception
    assert _metric(at, "Answered by") == "qmd (search)"
    table = next(d.value for d in at.dataframe if "citation" in d.value.columns)
    assert len(table) >= 1 and int(_metric(at, "Returned")) == len(table)
    assert table["citation"].iloc[0] == "memory/2026-11-14.md#L14-L17"
    # the sliders that do not apply are disabled, with the reason; the gate still applies
    for k in ("t_vector_weight", "t_text_weight", "t_candidate_multiplier", "t_date_hint"):
        assert at.slider(key=k).disabled, k
    assert "Does not apply to qmd" in (at.slider(key="t_vector_weight").help or "")
    assert not at.slider(key="t_min_score").disabled
    assert any("only minScore, maxResults" in c.value for c in at.caption)
    at.slider(key="t_min_score").set_value(0.99).run()
    assert int(_metric(at, "Returned")) == 0


def test_search_with_qmd_missing_falls_back(open_app: OpenApp, tmp_path: Path) -> None:
    clear_open_failures()
    ws = copy_demo(tmp_path / "w")
    cfg = ws / "memory-workbench.toml"
    cfg.write_text(cfg.read_text(encoding="utf-8") +
                   f'\n[qmd]\ncommand = "{tmp_path / "no-qmd"}"\n', encoding="utf-8")
    at = open_app(ws, SEARCH)
    at.radio(key="search_backend").set_value("qmd").run()
    at.text_input(key="search_query").input("database migration").run()
    assert not at.exception, at.exception
    assert _metric(at, "Answered by").startswith("builtin")
    assert any("qmd binary unavailable" in w.value for w in at.warning)
    clear_open_failures()


def test_evaluate_compares_builtin_profiles_and_qmd(open_app: OpenApp, demo_ws: Path) -> None:
    """Builtin default (A), builtin reference (B) and qmd on the demo's labelled queries."""
    clear_open_failures()
    at = open_app(demo_ws, "pages/evaluate.py", timeout=300)
    at.radio(key="eval_b").set_value("reference").run()
    at.toggle(key="eval_legs").set_value(False).run()
    at.toggle(key="eval_qmd").set_value(True).run()
    at.button(key="eval_run").click().run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "ndcg@10" in d.value.columns)
    runs = list(table.index)
    assert runs == ["A: tuned", "B: reference profile",
                    "qmd search (BM25), reference limits (4 results)",
                    "qmd search (BM25), 10 results"]
    assert ((table["success@10"] >= 0) & (table["success@10"] <= 1)).all()
    assert table.loc["qmd search (BM25), 10 results", "p50 ms"] > 0
