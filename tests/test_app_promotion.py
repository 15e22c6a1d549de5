"""AppTest of the Promotion page: replay signals, candidates with components, diff, apply, undo."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.apptesting import OpenApp

from .test_eval_dreaming import locomo_like_dataset

PAGE = "pages/promotion.py"


def _metric(at: AppTest, label: str) -> int:
    return int(next(m.value for m in at.metric if m.label == label))


def test_replay_then_apply_then_undo(open_app: OpenApp, demo_ws: Path) -> None:
    demo = demo_ws
    original = (demo / "MEMORY.md").read_bytes()
    at = open_app(demo, PAGE, timeout=300)
    assert _metric(at, "Tracked entries") == 0
    # the dreaming evaluation's saved held-out table, both profiles (issue 25 item 1)
    saved = next(d.value for d in at.dataframe if "saved searches" in d.value.columns)
    assert list(saved["profile"]) == ["reference", "default"]
    assert at.selectbox(key="promo_src").value == "demo"
    at.button(key="promo_replay").click().run()
    assert not at.exception
    assert any("searches over 7 days" in s.value for s in at.success)
    passed = _metric(at, "Pass the gates")
    assert passed > 0
    table = next(d.value for d in at.dataframe if "why not" in d.value.columns)
    assert table["passed"].all() and (table["score"] >= 0.8).all()
    # issue #23: a diary's age is its date's, not the days since the replay recalled it
    today = datetime.now(UTC).date()
    for _, row in table.iterrows():
        if row["diary date"] != "—":
            assert row["diary age (days)"] == (today - date.fromisoformat(row["diary date"])).days
    assert (table["diary age (days)"].dropna() > 0).any()
    assert (table["since recall (days)"] < 1).all()  # the replay's last day is today
    chart = json.loads(next(c for c in at.get("plotly_chart")
                            if c.key == "promo_chart").proto.spec)
    assert {t["name"] for t in chart["data"]} >= {"frequency", "relevance", "recency"}
    # one hover box a bar, its snippet carried once (issue #35: in every trace, with i
    # zero-width spaces on the i-th label, a toggle sent 400 kB): distinct labels stay as written
    bars = [t for t in chart["data"] if t["type"] == "bar"]
    assert chart["layout"]["hovermode"] == "y unified"
    assert [bool(t.get("customdata")) for t in bars] == [True] + [False] * (len(bars) - 1)
    assert len(bars[0]["customdata"]) == len(table)
    assert [y.rstrip("\u200b") for y in bars[0]["y"]] == bars[0]["y"]
    diff = next(c.value for c in at.code if c.value.startswith("--- a/MEMORY.md"))
    assert "+## Promoted From Short-Term Memory (" in diff
    # the default writes a chunk only if two of its queries each choose a line of it; the
    # others are shown as skipped, with the reason (docs/promotion.md section 5)
    skipped = "".join(w.value for w in at.warning if w.value.startswith("Skipped: "))
    skipped_keys = re.findall(r"`(memory:[^`]+)`", skipped)
    written = passed - len(skipped_keys)
    assert written > 0
    # the Apply button counts what it writes, not what passed the gates (issue #35)
    assert at.button(key="promo_apply").label == f"Apply ({written})"
    # the columns show what the gates test: every passing row meets minUniqueQueries 3
    shown = table[table["passed"]]
    assert (shown["queries/days (minUniqueQueries)"] >= 3).all()
    assert (shown["signals (minRecallCount)"] >= 3).all()
    assert diff.count("+<!-- openclaw-memory-promotion:") == written
    # a stricter gate leaves none, and says why
    at.number_input(key="promo_min_recalls").set_value(50).run()
    assert _metric(at, "Pass the gates") == 0
    assert any("No candidate passes" in c.value or "Nothing selected" in c.value
               for c in at.caption)
    at.number_input(key="promo_min_recalls").set_value(3).run()
    assert _metric(at, "Pass the gates") == passed
    # apply writes exactly the previewed section; undo restores the bytes. Every candidate at
    # once takes the demo's MEMORY.md over its budget: Apply waits for the confirmation.
    if any("over its budget" in w.value for w in at.warning):
        assert at.button(key="promo_apply").disabled
        at.checkbox(key="promo_over_ok").check().run()
    at.button(key="promo_apply").click().run()
    assert not at.exception
    assert any(s.value.startswith(f"Promoted {written} entr") for s in at.success)
    text = (demo / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Promoted From Short-Term Memory (" in text
    assert text.count("<!-- openclaw-memory-promotion:") == written
    after = next(d.value for d in at.dataframe if "why not" in d.value.columns)
    left = {"{}#L{}-L{}".format(*k.removeprefix("memory:").rsplit(":", 2))
            for k in skipped_keys}
    assert set(after["where"]) & set(table["where"]) <= left  # never promoted twice
    at.button(key="promo_undo").click().run()
    assert not at.exception
    assert (demo / "MEMORY.md").read_bytes() == original


def test_search_page_records_a_recall_only_when_asked(open_app: OpenApp, demo_ws: Path) -> None:
    at = open_app(demo_ws, "pages/search.py", timeout=300)
    at.text_input(key="search_query").input("COOKIE_EXPIRED").run()
    at.switch_page(PAGE).run()
    assert _metric(at, "Tracked entries") == 0  # searching alone records nothing
    at.switch_page("pages/search.py").run()
    at.button(key="search_record").click().run()
    assert any("recall(s) recorded" in s.value for s in at.success)
    at.switch_page(PAGE).run()
    assert _metric(at, "Tracked entries") > 0


def test_apply_waits_for_a_confirmation_while_over_the_budget(open_app: OpenApp,
                                                              demo_ws: Path) -> None:
    memory = demo_ws / "MEMORY.md"
    # the user's own text alone fills the budget: nothing promoted can be dropped to make room
    memory.write_text(memory.read_text(encoding="utf-8") + "\n## Notes of mine\n"
                      + "".join(f"- a long note of the user, line {i:04d}, kept as written\n"
                                for i in range(230)), encoding="utf-8")
    before = memory.read_bytes()
    at = open_app(demo_ws, PAGE, timeout=300)
    at.button(key="promo_replay").click().run()
    assert not at.exception
    assert any("over its budget" in w.value for w in at.warning)
    assert at.button(key="promo_apply").disabled
    at.checkbox(key="promo_over_ok").check().run()
    assert not at.button(key="promo_apply").disabled
    assert memory.read_bytes() == before  # nothing written until Apply is clicked


def test_the_dreaming_evaluation_replays_a_few_days_live(
        open_app: OpenApp, demo_ws: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With LoCoMo-shaped data beside the project, the page replays one conversation's first
    days in both profiles (cached), beside the saved held-out table."""
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(locomo_like_dataset(tmp_path)))
    at = open_app(demo_ws, PAGE, timeout=300)
    assert at.selectbox(key="dream_conv").value == "conv-x"
    at.slider(key="dream_days").set_value(4).run()
    at.button(key="dream_replay").click().run()
    assert not at.exception
    saved, live = [d.value for d in at.dataframe if "saved searches" in d.value.columns]
    assert list(saved["profile"]) == ["reference", "default"]  # the saved table stays above
    assert list(live["profile"]) == ["reference", "default"]
    assert (live["asks"] > 0).all()
    assert any("conv-x, its first 4 session days" in c.value for c in at.caption)


def test_run_light_and_rem_ingests_sessions_and_writes_the_diary(open_app: OpenApp,
                                                                demo_ws: Path) -> None:
    """The button does what `memory-core dream --sessions --diary` does (pr.dream): the
    transcripts' new lines into the session corpus, the phases, an entry in DREAMS.md."""
    now = datetime.now(UTC).replace(microsecond=0)
    ts = now.isoformat().replace("+00:00", "Z")
    rows = [{"type": "session", "version": 3, "id": "today", "timestamp": ts},
            {"type": "message", "id": "m1", "timestamp": ts, "message": {
                "role": "user", "content": "Which port does the staging database listen on?"}},
            {"type": "message", "id": "m2", "timestamp": ts, "message": {
                "role": "assistant", "content": "The staging database listens on port 5433."}}]
    (demo_ws / "sessions" / "today.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    at = open_app(demo_ws, PAGE, timeout=300)
    # the CLI's options, on the page
    assert at.radio(key="promo_phase").value == "both"
    assert at.selectbox(key="promo_storage").value == "separate"
    assert at.toggle(key="promo_diary").value is True
    assert at.toggle(key="promo_sessions").value is True  # the workspace has transcripts
    at.button(key="promo_dream").click().run()
    assert not at.exception
    said = [s.value for s in at.success]
    assert any(s.startswith("light:") and "2 transcript lines ingested" in s for s in said), said
    assert any(s.startswith("rem:") and "DREAMS.md" in s for s in said), said
    corpus = demo_ws / "memory/.dreams/session-corpus" / f"{now.date().isoformat()}.txt"
    assert corpus.read_text(encoding="utf-8").splitlines() == [
        "[main/sessions/today.jsonl#L2] User: Which port does the staging database listen on?",
        "[main/sessions/today.jsonl#L3] Assistant: The staging database listens on port 5433."]
    assert (demo_ws / "DREAMS.md").is_file()
    assert list((demo_ws / "memory" / "dreaming" / "light").glob("*.md"))


def test_stale_memory_lines_are_shown_and_updated(open_app: OpenApp, tmp_path: Path) -> None:
    """Issue #34: a MEMORY.md line a later diary superseded, beside the newer line, shown even
    before any recall is tracked; the update is written by the button and undone like any
    apply."""
    import os

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- Redis maxmemory is 2gb on the frontier host.\n",
                                  encoding="utf-8")
    os.utime(ws / "MEMORY.md", (1772323200, 1772323200))  # 2026-03-01
    (ws / "memory" / "2026-05-11.md").write_text(
        "# 2026-05-11\n\n- Raised Redis maxmemory from 2gb to 4gb.\n", encoding="utf-8")
    original = (ws / "MEMORY.md").read_bytes()
    at = open_app(ws, PAGE, timeout=300)
    assert not at.exception
    assert any(h.value == "Stale in MEMORY.md" for h in at.subheader)
    table = next(d.value for d in at.dataframe if "newer line" in d.value.columns)
    assert list(table["where"]) == ["memory/2026-05-11.md#L3"]
    at.button(key="promo_stale").click().run()
    assert "4gb" in (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert not any(h.value == "Stale in MEMORY.md" for h in at.subheader)
    # reverted like any apply (the page's "Undo last" calls the same undo)
    from memory_core import MemoryIndex
    from memory_core import promotion as pr

    with MemoryIndex.open(ws, provider="none") as idx:
        assert pr.undo(idx).restored
    assert (ws / "MEMORY.md").read_bytes() == original
