"""AppTest of the home page: status at a glance, "Index now", and the workspace picker."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.apptesting import OpenApp
from workbench import state


def _home(open_app: OpenApp, ws: Path, datasets: Path | None = None) -> AppTest:
    """The home page on ``ws``, with no evaluation data unless ``datasets`` is given."""
    return open_app(ws, datasets=datasets or ws.parent / "no-datasets", timeout=120)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_indexes_with_progress_and_shows_status(open_app: OpenApp, demo_ws: Path) -> None:
    at = _home(open_app, demo_ws)
    # the first visit builds the index itself, in the start-up box, with n of N and the time
    # so far (issue #35: a blank page for two minutes), before the watcher could
    assert _metrics(at)["Files"] == "20"
    assert not any("not indexed yet" in i.value for i in at.info)
    at.button(key="home_index").click().run()
    assert not at.exception
    assert any("0 files indexed (20 unchanged" in s.value for s in at.success)
    m = _metrics(at)
    assert (m["Files"], m["Chunks"], m["Provider"], m["Search mode"], m["Up to date"]) == (
        "20", "40", "none", "fts-only", "yes")
    sources = at.dataframe[0].value.set_index("source")
    assert sources.loc["memory", "files"] == 17 and sources.loc["sessions", "files"] == 3
    assert sources["chunks"].sum() == 40
    # the malformed transcript line is reported
    assert any("malformed" in e.label or "Warnings" in e.label for e in at.expander)
    # the index was written into the private copy
    assert (demo_ws / ".memory").is_dir()


def test_home_reports_an_edited_file_as_dirty(open_app: OpenApp, demo_ws: Path) -> None:
    at = _home(open_app, demo_ws)
    at.button(key="home_index").click().run()
    assert _metrics(at)["Up to date"] == "yes"
    (demo_ws / "memory" / "2026-11-28.md").write_text("# changed\n\nnew text\n", encoding="utf-8")
    at.run()
    assert _metrics(at)["Up to date"] == "no"
    at.button(key="home_index").click().run()
    assert any("1 files indexed" in s.value for s in at.success)
    assert _metrics(at)["Up to date"] == "yes"


def test_picker_opens_any_folder_and_rejects_a_missing_one(open_app: OpenApp, demo_ws: Path,
                                                           tmp_path: Path) -> None:
    other = tmp_path / "tiny"
    (other / "memory").mkdir(parents=True)
    (other / "MEMORY.md").write_text("# Tiny\n\n- 你好，世界: a CJK line.\n", encoding="utf-8")
    at = _home(open_app, demo_ws)
    at.radio(key="wb_ws_mode").set_value("folder").run()
    at.text_input(key="wb_ws_folder").input(str(other)).run()
    assert not at.exception
    assert at.session_state["wb_key"].workspace == str(other.resolve())
    at.button(key="home_index").click().run()
    assert _metrics(at)["Files"] == "1"
    at.text_input(key="wb_ws_folder").input(str(tmp_path / "missing")).run()
    assert any("is not a folder" in e.value for e in at.error)


def test_dataset_workspace_is_indexed_outside_the_data(open_app: OpenApp, demo_ws: Path,
                                                      tmp_path: Path) -> None:
    data = tmp_path / "datasets"
    conv = data / "locomo-dev" / "markdown" / "conv-x"
    (conv / "memory").mkdir(parents=True)
    (conv / "memory" / "2023-05-08.md").write_text(
        "# Session 1\n\n[D1:1] Caroline: I went to a support group yesterday.\n",
        encoding="utf-8")
    cache = demo_ws.parent / "cache"  # where open_app puts the workbench's cache
    at = _home(open_app, demo_ws, datasets=data)
    assert state.dataset_workspaces() == {"locomo-dev/markdown/conv-x": str(conv)}
    at.radio(key="wb_ws_mode").set_value("dataset").run()
    assert at.selectbox(key="wb_ws_dataset").value == "locomo-dev/markdown/conv-x"
    assert any("Read-only data" in c.value for c in at.sidebar.caption)
    # not indexed yet: the legs are unknown, not "no embedding provider" (issue #23)
    legs = " ".join(m.value for m in at.markdown)
    assert "no embedding provider" not in legs and "Known once indexed" in legs
    at.button(key="home_index").click().run()
    assert not at.exception
    assert _metrics(at)["Files"] == "1"
    # the index lives in the cache; the dataset folder gained nothing
    assert sorted(p.name for p in conv.rglob("*")) == ["2023-05-08.md", "memory"]
    assert any(cache.rglob("*.sqlite"))
