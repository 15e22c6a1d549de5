"""AppTest of Search & tune: the gate, re-fusing cached candidates, A/B movement, export."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import profile_settings
from memory_core.base.dates import DAY_MS, day_start_ms
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from tests.apptesting import OpenApp
from workbench import tuning

PAGE = "pages/search.py"


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _frame(at: AppTest, column: str):  # the first table with that column (a DataFrame)
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _results(at: AppTest):  # the results table
    return _frame(at, "status")


def _open_tab(at: AppTest, name: str) -> AppTest:
    """Open one of the page's tabs: the A/B and export tabs are computed only while open."""
    at.session_state["search_tab"] = name
    return at.run()


def _gate_between(df) -> float:  # a minScore that cuts the returned hits in two
    scores = sorted(df[df["status"] == "returned"]["score"], reverse=True)
    assert len(scores) >= 2 and scores[0] > scores[-1], scores
    return round((scores[0] + scores[-1]) / 2, 2)


def test_raising_min_score_reduces_the_hits_and_greys_the_rest(
        open_app: OpenApp, module_demo: Path) -> None:
    at = open_app(module_demo, PAGE)
    # keyword-only hits may otherwise fill free slots below the gate (OpenClaw 2026.9's rule)
    at.toggle(key="t_keyword_only_fill").set_value(False).run()
    at.text_input(key="search_query").input("PgBouncer port").run()
    assert not at.exception
    before = int(_metric(at, "Returned"))
    assert before == at.slider(key="t_max_results").value  # maxResults hits
    gate = _gate_between(_results(at))
    at.slider(key="t_min_score").set_value(gate).run()
    after = int(_metric(at, "Returned"))
    assert 0 < after < before
    df = _results(at)
    assert (df["status"] == "returned").sum() == after
    assert (df[df["status"] == "returned"]["score"] >= gate).all()
    gated = df[df["status"] == "below minScore"]
    assert len(gated) >= before - after  # the gated hits stay visible, below the results
    assert (gated["score"] < gate).all() and (gated["rank"] == "–").all()
    assert list(df[df["status"] == "returned"]["rank"]) == [str(i) for i in range(1, after + 1)]
    # the composition is drawn as light HTML bars, the gate's line named in their legend;
    # the interactive Plotly figure only once its expander is opened (issue #23)
    bars = [h.proto.body for h in at.get("html") if f"minScore {gate:.2f}" in h.proto.body]
    assert len(bars) == 1 and bars[0].count("opacity:0.38") >= before - after
    assert not at.get("plotly_chart")
    at.session_state["search_chart"] = True
    at.run()
    assert any(getattr(e, "key", None) == "search_composition"
               for e in at.get("plotly_chart"))


def test_sliders_refuse_cached_candidates_without_refetching(
        open_app: OpenApp, module_demo: Path) -> None:
    at = open_app(module_demo, PAGE)
    at.text_input(key="search_query").input("crawler concurrency").run()
    fetched = len(at.session_state["wb_candidates"])  # A's candidates (the A/B tab is closed)
    assert fetched == 1
    first = list(_results(at)["citation"])
    at.slider(key="t_max_results").set_value(3).run()
    at.slider(key="t_text_weight").set_value(0.9).run()
    at.selectbox(key="t_fusion").set_value("reference").run()
    assert not at.exception
    assert len(at.session_state["wb_candidates"]) == fetched  # no new fetch: only re-fused
    assert int(_metric(at, "Returned")) <= 3
    assert list(_results(at)["citation"]) != first
    # a keyword-query option changes what is fetched: one more cache entry
    at.radio(key="t_keyword_query").set_value("and").run()
    assert len(at.session_state["wb_candidates"]) == fetched + 1
    # the tuned values survive a visit to another page
    at.switch_page("pages/chunks.py").run()
    at.switch_page("pages/search.py").run()
    assert at.slider(key="t_max_results").value == 3
    assert at.selectbox(key="t_fusion").value == "reference"


def test_ab_view_reports_rank_movements(open_app: OpenApp, module_demo: Path) -> None:
    at = open_app(module_demo, PAGE)
    at.text_input(key="search_query").input("which port does PgBouncer listen on").run()
    fetched = len(at.session_state["wb_candidates"])
    _open_tab(at, "A/B compare")
    at.radio(key="ab_choice").set_value("reference").run()
    assert not at.exception
    assert int(_metric(at, "Rank movements (A → B)")) > 0
    table_b = _frame(at, "movement")
    labels = set(table_b["movement"])
    assert labels - {"="}, labels
    assert all(lbl in {"=", "new", "dropped"} or lbl[0] in "↑↓" for lbl in labels)
    # B's candidates were fetched when the tab opened, once: a slider step refetches nothing
    assert len(at.session_state["wb_candidates"]) == fetched + 1
    at.slider(key="t_min_score").set_value(0.2).run()
    assert len(at.session_state["wb_candidates"]) == fetched + 1
    # pin the current settings as B: identical settings move nothing
    at.button(key="t_pin").click().run()
    at.radio(key="ab_choice").set_value("pinned").run()
    assert int(_metric(at, "Rank movements (A → B)")) == 0


def test_export_writes_openclaw_query_block(open_app: OpenApp, module_demo: Path) -> None:
    at = open_app(module_demo, PAGE)
    at.text_input(key="search_query").input("backup").run()
    at.slider(key="t_min_score").set_value(0.42).run()
    at.slider(key="t_max_results").set_value(8).run()
    at.toggle(key="t_mmr_enabled").set_value(True).run()
    at.slider(key="t_mmr_lambda").set_value(0.5).run()
    assert not any('"memorySearch"' in c.value for c in at.code)  # computed only when opened
    _open_tab(at, "Export settings")
    code = next(c.value for c in at.code if '"memorySearch"' in c.value)
    block = json.loads(code)["memorySearch"]["query"]
    assert block["maxResults"] == 8 and block["minScore"] == 0.42
    assert set(block["hybrid"]) == {"enabled", "vectorWeight", "textWeight",
                                    "candidateMultiplier", "mmr", "temporalDecay"}
    assert block["hybrid"]["mmr"] == {"enabled": True, "lambda": 0.5}
    assert block["hybrid"]["temporalDecay"] == {"enabled": False, "halfLifeDays": 30.0}
    # the default profile's own improvements cannot be carried over, and the page says so
    assert any("fusion=" in w.value for w in at.warning)
    assert at.get("download_button")


@pytest.mark.slow  # loads the local model: ~20 s
def test_search_with_the_local_model_is_hybrid(open_app: OpenApp,
                                               indexed_demo_copy: Path) -> None:
    # the demo's local-model index, copied (the app finds it up to date: tests/test_app_map.py
    # has the app build one itself); the module's workspace stays keyword-only
    at = open_app(indexed_demo_copy, PAGE, provider="local")
    at.toggle(key="t_keyword_only_fill").set_value(False).run()
    # a question the default answers (issue #21: a paraphrase it cannot find gets nothing)
    at.text_input(key="search_query").input(
        "Why did we choose WireGuard instead of OpenVPN?").run()
    assert not at.exception
    vec, _ = (int(x) for x in _metric(at, "Candidates").split(" + "))
    assert vec == 40  # every chunk has a cosine
    df = _results(at)
    returned = df[df["status"] == "returned"]
    by_vector = returned[returned["vector rank"] != "–"]
    # every returned hit carries its real cosine (a keyword hit's may be slightly negative)
    assert len(by_vector) > 0 and (by_vector["vectorScore"].abs() > 0).all()
    assert set(returned["via"]) <= {"both", "vector", "keyword"}
    before = len(returned)
    at.slider(key="t_min_score").set_value(_gate_between(df)).run()
    assert 0 < int(_metric(at, "Returned")) < before


def test_widgets_round_trip_to_settings() -> None:
    base = profile_settings("default")
    noon = day_start_ms("2026-11-03") + DAY_MS // 2
    tuned = replace(base, max_results=3, fusion="rrf", now_ms=noon, date_hint=0.35)
    widgets = tuning.widget_values(tuning.settings_values(tuned), "t_")
    assert set(widgets) == {"t_" + f for f in tuning.TUNABLE}
    assert widgets["t_now_ms"] == date(2026, 11, 3)  # the date picker's value
    # a widget not drawn on the last run (MMR λ while MMR is off) keeps the fallback's value
    del widgets["t_mmr_lambda"]
    fallback = tuning.settings_values(replace(tuned, mmr_lambda=0.3))
    back = tuning.settings_from_widgets(base, widgets, "t_", fallback)
    assert back == replace(tuned, mmr_lambda=0.3)
    assert tuning.settings_diff(base, back) == {
        "max_results": (base.max_results, 3), "fusion": (base.fusion, "rrf"),
        "mmr_lambda": (base.mmr_lambda, 0.3), "now_ms": (None, noon),
        "date_hint": (base.date_hint, 0.35)}
    widgets["t_now_ms"] = None  # the picker cleared: the clock again
    assert tuning.settings_from_widgets(base, widgets, "t_", fallback).now_ms is None


def test_inert_weights_and_an_empty_b_say_why(open_app: OpenApp, module_demo: Path) -> None:
    """Issue #23: on a keyword-only index the weight sliders do nothing and say so beside
    them; a B that returns nothing says why instead of showing a blank table; the snippet of
    the hit in focus has the query's terms marked."""
    at = open_app(module_demo, PAGE)  # provider none: a keyword-only index
    at.text_input(key="search_query").input("PgBouncer port").run()
    assert not at.exception
    notes = " ".join(c.value for c in at.caption)
    assert "vectorWeight has no effect here: the index is keyword-only" in notes
    assert "textWeight has no effect here" in notes
    assert "minScore " in notes and "vectorWeight " in notes  # the settings line
    pane = [h.proto.body for h in at.get("html")]
    assert any("<mark>PgBouncer</mark>" in b or "<mark>pgbouncer</mark>" in b for b in pane)
    at.text_input(key="search_query").input("which colleague is leaving the company").run()
    _open_tab(at, "A/B compare")
    at.radio(key="ab_choice").set_value("reference").run()  # OpenClaw's AND query: no match
    assert not at.exception
    assert any(i.value.startswith("B returns nothing: neither leg found a candidate")
               for i in at.info), [i.value for i in at.info]


def test_query_terms_and_empty_reasons() -> None:
    assert tuning.query_terms("Which port does PgBouncer listen on?") == [
        "port", "pgbouncer", "listen"]
    assert tuning.query_terms("连接池 timeout") == ["连接池", "timeout", "连接", "接池"]


def test_a_cjk_query_says_its_weights_come_from_cjk_vector_weight() -> None:
    """Issue #21 gives mostly-CJK queries their own weight (cjk_vector_weight), so the
    vectorWeight slider cannot move them: the note says so instead of "changes nothing"."""

    chunks = {i: ChunkInfo(i, f"memory/{i}.md", "memory", 1, 2, f"text {i}") for i in "ab"}

    def cands(q: str) -> Candidates:
        return Candidates(q, "hybrid", (LegHit("a", 0.6, 1, 0.6), LegHit("b", 0.5, 2, 0.5)),
                          (LegHit("b", 0.9, 1, -9.0), LegHit("a", 0.2, 2, -2.0)), chunks, 200)

    s = replace(profile_settings("default"), calibration="", abstain_below=0.0, min_score=0.0,
                cjk_vector_weight=0.5)
    notes = tuning.weight_notes(cands("连接池上限是多少"), s)
    assert "cjk_vector_weight" in notes["vector_weight"] and "0.50 / 0.50" in notes["vector_weight"]
    assert tuning.weight_notes(cands("connection pool limit"), s) == {}
