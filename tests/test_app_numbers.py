"""The workbench's numbers are the engine's for the settings shown (issue #35): on the demo
OpenClaw home ``make run`` opens, the sidebar's ``default`` is the default profile with its own
chunking (the index ``memory-core -w <workspace>`` reads), the first evaluation compares the
default with the reference, a sweep's ties are shown as ties, and a rerun of a page that has
measured does not measure again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryIndex
from memory_core import evaluation as ev
from memory_core.openclaw import open_home
from tests.apptesting import APP, workbench_env
from workbench import evalruns, state

HOME = APP.parent / "examples" / "demo-home"


@pytest.fixture(scope="module")
def home_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("numbers") / "demo-home"
    shutil.copytree(HOME, home, ignore=shutil.ignore_patterns(".memory"))
    return home


def test_a_homes_default_profile_chunks_as_the_default_profile(home_copy: Path) -> None:
    home = open_home(home_copy)
    ref, dflt = home.load_config(profile="reference"), home.load_config(profile="default")
    alone = MemoryIndex.open(home.workspace, profile="default", provider="none")
    assert ref.chunking.mode == "reference"
    assert dflt.chunking.mode == alone.config.chunking.mode == "bounded"
    assert dflt.store_path(home.workspace) != ref.store_path(home.workspace)
    # a chunking mode the user wrote down is kept across the switch
    kept = home.load_config({"chunking": {"mode": "reference"}}, profile="default")
    assert kept.chunking.mode == "reference"


def test_sweep_ties_are_broken_toward_the_current_settings() -> None:
    rows = [{"vector_weight": vw, "min_score": ms, "success@5": 0.623 if ms < 0.5 else 0.4}
            for vw in (0.0, 0.5, 1.0) for ms in (0.0, 0.35, 0.7)]
    best, tied = evalruns.best_cells(rows, "success@5", (0.5, 0.35))
    assert (best["vector_weight"], best["min_score"], tied) == (0.5, 0.35, 6)
    best, tied = evalruns.best_cells(rows, "success@5", (1.0, 0.7))
    assert (best["vector_weight"], best["min_score"]) == (1.0, 0.35)


def _open_home_app(monkeypatch: pytest.MonkeyPatch, home: Path, tmp: Path) -> AppTest:
    for k, v in workbench_env(home / "workspace", tmp / "cache", "none").items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MEMORY_WORKBENCH_OPENCLAW_HOME", str(home))
    monkeypatch.setenv("MEMORY_WORKBENCH_RUNS", str(tmp / "runs"))
    at = AppTest.from_file(str(APP), default_timeout=300).run()
    assert not at.exception, at.exception
    return at


def test_evaluate_on_the_demo_home(monkeypatch: pytest.MonkeyPatch, home_copy: Path,
                                   tmp_path: Path) -> None:
    at = _open_home_app(monkeypatch, home_copy, tmp_path)
    assert at.selectbox(key="wb_profile").value == "reference"
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, at.exception
    # the home opens on the reference profile: B starts on the default one, not on A's own
    assert at.radio(key="eval_b").value == "default"
    at = _open_home_app(monkeypatch, home_copy, tmp_path)  # the sidebar is drawn on Home
    at.selectbox(key="wb_profile").set_value("default").run()
    at.switch_page("pages/evaluate.py").run()
    assert any("chunking bounded" in c.value for c in at.caption)
    at.radio(key="eval_b").set_value("reference").run()
    at.toggle(key="eval_legs").set_value(False).run()
    at.button(key="eval_run").click().run()
    assert not at.exception, at.exception
    table = next(d.value for d in at.dataframe if "ndcg@10" in d.value.columns)
    # the same figures as the library (and `memory-core eval`) on the workspace opened alone
    alone = MemoryIndex.open(home_copy / "workspace", profile="default", provider="none")
    alone.sync()
    want = ev.run_eval(alone, ev.load_query_set("demo-home"), alone.settings())
    got_m = want.runs[0].metrics["chunk"]
    assert table.loc["A: tuned", "success@5"] == pytest.approx(got_m["success@5"])
    assert table.loc["A: tuned", "ndcg@10"] == pytest.approx(got_m["ndcg@10"])
    # a click after the measurement answers from the memo: nothing is searched again
    before = dict(state._memo)
    chunk_view = at.session_state["wb_view_eval-metrics"][("chunk",)]
    at.radio(key="eval_level").set_value("file").run()
    assert not at.exception, at.exception
    assert dict(state._memo) == before
    # and back: the table and bars built for the chunk level are drawn again, not rebuilt
    at.radio(key="eval_level").set_value("chunk").run()
    assert at.session_state["wb_view_eval-metrics"][("chunk",)] is chunk_view
    assert set(at.session_state["wb_view_eval-metrics"]) == {None, ("chunk",), ("file",)}


def test_every_suggested_query_answers_on_the_demo_home(home_copy: Path) -> None:
    from workbench.tuning import EXAMPLE_QUERIES

    home = open_home(home_copy)
    for profile in ("reference", "default"):
        idx = home.open_index(profile=profile, provider="none")
        for query, profiles in EXAMPLE_QUERIES.items():
            if profile in profiles:
                assert idx.search(query).hits, (profile, query)
    assert "who is on call?" in (APP.parent / "pages" / "embedding_map.py").read_text()


def test_runs_of_different_indexes_or_sets_say_so(tmp_path: Path) -> None:
    from memory_core.evaluation.runs import SavedRun

    base = {"query_set": "demo-home", "level": "lines",
            "index": {"": {"path": "a/reference-none.sqlite", "identity": "x"}}}
    a = SavedRun(tmp_path / "a", base)
    assert evalruns.mismatch_notes(a, SavedRun(tmp_path / "b", dict(base))) == []
    other = {**base, "index": {"": {"path": "a/bounded-none.sqlite", "identity": "y"}}}
    assert any("different indexes" in n
               for n in evalruns.mismatch_notes(a, SavedRun(tmp_path / "b", other)))
    assert any("different query sets" in n for n in evalruns.mismatch_notes(
        a, SavedRun(tmp_path / "b", {**base, "query_set": "demo"})))


def test_holm_adjusts_a_family_of_p_values() -> None:
    adj = evalruns.holm([0.01, 0.04, 0.03, 0.5])
    # sorted 0.01, 0.03, 0.04, 0.5 → ×4, ×3, ×2, ×1, monotone
    assert adj == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_search_ab_starts_on_the_other_profile(monkeypatch: pytest.MonkeyPatch,
                                               home_copy: Path, tmp_path: Path) -> None:
    at = _open_home_app(monkeypatch, home_copy, tmp_path)
    at.switch_page("pages/search.py").run()
    at.text_input(key="search_query").set_value("invoice").run()
    at.session_state["search_tab"] = "A/B compare"  # computed only while open
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="ab_choice").value == "default"
    assert not any("'" in c.value for c in at.caption if c.value.startswith("Settings that"))
