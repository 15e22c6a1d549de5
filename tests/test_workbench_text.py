"""Text the pages draw (issue #35): snippets mark whole words as the keyword leg matches them,
and settings read as a person writes them, not as Python reprs."""

from __future__ import annotations

from workbench.chunkview import display_value, mark, snippet_html


def test_snippets_mark_whole_words_only() -> None:
    html = snippet_html("Will said ill-timed deploys make him ill.", ["ill"])
    assert "W<mark>ill</mark>" not in html and "Will" in html
    assert html.count("<mark>ill</mark>") == 2  # "ill-timed" and "ill."
    assert mark("连接池满了", ["连接"], words=True) == "<mark>连接</mark>池满了"
    # the Chunks page's filter is a substring search: it still marks inside words
    assert mark("Will", ["ill"]) == "W<mark>ill</mark>"


def test_settings_are_not_python_reprs() -> None:
    assert display_value(None) == "—"
    assert display_value(["memory", "sessions"]) == "memory, sessions"
    assert display_value(True) == "on" and display_value(0.35) == "0.35"


def test_qmd_snippets_lose_their_hunk_header() -> None:
    from workbench.chunkview import without_hunk_header

    assert without_hunk_header("@@ -3,3 @@ (2 before, 5 after)\nPgBouncer port 6432") == (
        "PgBouncer port 6432")
    assert without_hunk_header("a line with @@ inside @@") == "a line with @@ inside @@"


def test_map_dates_are_one_continuous_scale() -> None:
    import math

    from workbench.maplayers import date_scale

    days, vals, labels = date_scale(["2026-10-01", "undated", "2026-10-11", "2026-10-06"])
    assert list(days[[0, 2, 3]]) == [0.0, 10.0, 5.0] and math.isnan(days[1])
    assert labels[0] == "2026-10-01" and labels[-1] == "2026-10-11" and vals[-1] == 10.0


def test_hovers_carry_no_quote_entities() -> None:
    from workbench.charts import wrap

    assert "&quot;" not in wrap('he said "retry" <b>', 60, 3)
    assert "&lt;b&gt;" in wrap('he said "retry" <b>', 60, 3)
    assert "&quot;" not in wrap('the "pool" size', 60, 3)
