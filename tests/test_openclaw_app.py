"""AppTest of the workbench on an OpenClaw home (issue #12): the picker, the Home page's
settings with their provenance, the Real queries page, Evaluate's label-free metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptesting import APP, workbench_env

from .openclaw_fixture import MAIN_CALLS, MAIN_TIMES, _call, _result, build_home


def _open_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, page: str | None = None,
               agent: str = "main", home: Path | None = None) -> AppTest:
    home = home or build_home(tmp_path)
    for k, v in workbench_env(home / "workspace", tmp_path / "cache", "none").items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(tmp_path / "no-datasets"))
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    at.radio(key="wb_ws_mode").set_value("openclaw").run()
    at.text_input(key="wb_oc_home").set_value(str(home)).run()
    if agent != "main":
        at.selectbox(key="wb_oc_agent").set_value(agent).run()
    if page is not None:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_picker_opens_a_home_and_home_page_shows_provenance(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path)
    assert at.selectbox(key="wb_oc_agent").options == ["main", "ops"]
    table = next(d.value for d in at.dataframe if "where" in d.value.columns)
    rows = table.set_index("setting")
    assert rows.loc["maxResults", "value"] == "3"
    assert rows.loc["maxResults", "from"] == "openclaw.json"
    assert rows.loc["maxResults", "where"] == "agents.defaults.memorySearch.query.maxResults"
    assert rows.loc["candidate multiplier", "from"] == "reference default"
    at.selectbox(key="wb_oc_agent").set_value("ops").run()
    assert not at.exception
    rows = next(d.value for d in at.dataframe if "where" in d.value.columns).set_index("setting")
    assert rows.loc["maxResults", "value"] == "2"


def test_real_queries_page_then_and_now(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path, "pages/real_queries.py")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Zero results then"] == "20%"
    assert "Zero results now" in metrics and "Overlap@3" in metrics
    table = next(d.value for d in at.dataframe if "overlap" in d.value.columns)
    assert list(table["query"]) == [q for q, _, _ in MAIN_CALLS]
    assert list(table["then"]) == [len(r) for _, _, r in MAIN_CALLS]
    # a query that got nothing then has no overlap: a dash, not the literal "None"
    assert "None" not in [str(v) for v in table["overlap"]]
    assert table["overlap"][2] == "—"
    # snippets are memory text, not Markdown: the diary's "# 2026-11-20" is no heading (a
    # plain-text block of the side's one Markdown element)
    assert any("~~~~text\n# 2026-11-20" in m.value for m in at.markdown), [
        m.value for m in at.markdown]
    assert not any(h.value.startswith("2026-11-20") for h in at.markdown)


def test_real_queries_fence_outlasts_a_snippets_own_tildes(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A snippet holding a ``~~~~`` line stays one plain-text block: a fixed four-tilde fence
    was closed by it, and the rest of the snippet was drawn as Markdown (a heading here)."""
    from markdown_it import MarkdownIt

    snippet = "before\n~~~~\n# not a heading\n~~~~~~\nafter"
    home = build_home(tmp_path)
    sess = home / "agents" / "main" / "sessions" / "s2.jsonl"
    t = MAIN_TIMES[-1] + 60_000
    hit = {"path": "memory/2026-11-22.md", "startLine": 1, "endLine": 3, "score": 0.5,
           "snippet": snippet, "source": "memory"}
    with sess.open("a", encoding="utf-8") as f:
        f.write(_call("call_t", "tilde fences", {}, t) + "\n"
                + _result("call_t", [hit], t + 100) + "\n")
    at = _open_home(monkeypatch, tmp_path, "pages/real_queries.py", home=home)
    at.selectbox(key="rq_pick").set_value(len(MAIN_CALLS)).run()
    then = next(m.value for m in at.markdown if "2026-11-22.md#L1-L3" in m.value)
    fences = [t for t in MarkdownIt().parse(then) if t.type == "fence"]
    assert [(f.info, f.content) for f in fences] == [("text", snippet + "\n")], then
    assert not any(t.type == "heading_open" for t in MarkdownIt().parse(then))


def test_evaluate_shows_label_free_metrics_on_real_queries(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path, "pages/evaluate.py")
    table = next(d.value for d in at.dataframe if "zero results now" in d.value.columns)
    assert len(table) == 2 and (table["zero results then"] == "20%").all()


def test_search_page_writes_the_tuned_settings_into_openclaw_json(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path, "pages/search.py")
    at.text_input(key="search_query").set_value("cookie").run()
    at.session_state["search_tab"] = "Export settings"  # computed only while open
    at.run()
    cfg = tmp_path / "oc-home" / "openclaw.json"
    assert any("already says this" in c.value for c in at.caption)
    # the file changes behind the open index: the export puts the tuned value (3) back
    cfg.write_text(cfg.read_text().replace("maxResults: 3,", "maxResults: 7,"))
    at.run()
    diff = next(c.value for c in at.code if c.value.startswith("--- a/openclaw.json"))
    assert "-          maxResults: 7," in diff and "+          maxResults: 3," in diff
    # the user's tracked file is written only once they said so (issue #35)
    assert at.button(key="export_openclaw").disabled
    at.checkbox(key="export_confirm").check().run()
    at.button(key="export_openclaw").click().run()
    assert not at.exception
    assert "maxResults: 3," in cfg.read_text() and "// where the agents live" in cfg.read_text()
    backups = list(cfg.parent.glob("openclaw.json.bak-*"))
    assert len(backups) == 1 and "maxResults: 7," in backups[0].read_text()


def test_search_page_export_into_a_read_only_openclaw_json_is_one_error(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path, "pages/search.py")
    at.text_input(key="search_query").set_value("cookie").run()
    at.session_state["search_tab"] = "Export settings"  # computed only while open
    at.run()
    cfg = tmp_path / "oc-home" / "openclaw.json"
    cfg.write_text(cfg.read_text().replace("maxResults: 3,", "maxResults: 7,"))
    cfg.chmod(0o444)
    before = cfg.read_bytes()
    try:
        at.run()
        at.checkbox(key="export_confirm").check().run()
        at.button(key="export_openclaw").click().run()
        assert not at.exception
        assert any("read-only" in e.value for e in at.error)
        assert cfg.read_bytes() == before and not list(cfg.parent.glob("openclaw.json.bak-*"))
    finally:
        cfg.chmod(0o644)


def test_promotion_page_records_real_recalls_and_runs_the_phases(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    at = _open_home(monkeypatch, tmp_path, "pages/promotion.py")
    at.button(key="promo_real").click().run()
    assert not at.exception
    assert any("5 calls: 5 recalls recorded" in s.value for s in at.success)
    at.button(key="promo_dream").click().run()
    assert not at.exception
    ws = tmp_path / "oc-home" / "workspace"
    assert list((ws / "memory" / "dreaming" / "light").glob("*.md"))
    assert list((ws / "memory" / "dreaming" / "rem").glob("*.md"))
    assert any(s.value.startswith("light:") for s in at.success)


def test_sidebar_shows_the_profile_the_page_runs_on_a_home(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue #23: "OpenClaw home" first tries ~/.openclaw, which is often missing, and stops
    before the Profile box; the home typed next opens with the reference profile, and the box
    the browser draws must say so (not its first option, "default")."""
    home = build_home(tmp_path)
    for k, v in workbench_env(home / "workspace", tmp_path / "cache", "none").items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(tmp_path / "no-datasets"))
    monkeypatch.setenv("HOME", str(tmp_path / "no-home"))  # no ~/.openclaw
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    at.radio(key="wb_ws_mode").set_value("openclaw").run()
    assert any("Cannot open the OpenClaw home" in e.value for e in at.error)
    at.text_input(key="wb_oc_home").set_value(str(home)).run()
    assert not at.exception
    assert at.session_state["wb_key"].profile == "reference"
    box = at.selectbox(key="wb_profile").proto
    # what the browser draws: the value the server sends with the box, else its default option
    drawn = box.raw_value if box.set_value else box.options[box.default]
    assert drawn == "reference"
