"""Relative dates in a question ("four weeks ago", "last Saturday") count from when it is asked.

LongMemEval's temporal questions name no date ("I mentioned an investment for a competition four
weeks ago? What did I buy?"): the diary of that day is the answer, and only the day the question
is asked makes the date (issue #36). The date hint reads ``SearchSettings.now_ms`` (the clock
when unset); the evaluation passes each question's own date. A real index, nothing mocked.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.base.dates import asked_ms
from memory_core.evaluation.datasets import EvalQuery
from memory_core.evaluation.runner import asked_settings
from memory_core.read.query import DateSpan, date_hints, relative_spans

SAT = date(2023, 4, 1)  # a Saturday


def _day(d: date) -> DateSpan:
    return DateSpan(d, d)


def test_relative_spans_count_from_today() -> None:
    assert relative_spans("what did I buy four weeks ago?", SAT) == [
        DateSpan(date(2023, 2, 28), date(2023, 3, 8))]
    assert relative_spans("10 days ago", SAT) == [_day(date(2023, 3, 22))]
    assert relative_spans("a couple of days ago", SAT) == [_day(date(2023, 3, 30))]
    assert relative_spans("yesterday", SAT) == [_day(date(2023, 3, 31))]
    # "last Saturday" on a Saturday is a week back; "last Friday" the day before
    assert relative_spans("last Saturday", SAT) == [_day(date(2023, 3, 25))]
    assert relative_spans("last Friday", SAT) == [_day(date(2023, 3, 31))]
    assert relative_spans("last weekend", SAT) == [DateSpan(date(2023, 3, 25), date(2023, 3, 26))]
    assert relative_spans("last week", SAT) == [DateSpan(date(2023, 3, 20), date(2023, 3, 26))]


def test_questions_that_name_no_day() -> None:
    for q in ("How many days ago did I meet Emma?", "How many weeks ago was the sale?",
              "What did I buy most recently?", "dinner this weekend", "weeks ago",
              # too wide to name a day: they would lift a month of notes above the answer
              "last month's bill", "in the past month", "over the past two weeks", "this week"):
        assert relative_spans(q, SAT) == [], q
    # without a today, only absolute dates count (the reference's and old callers' view)
    assert date_hints("what did I buy four weeks ago?") == []
    assert date_hints("on 7 May 2023, four weeks ago", SAT) == [
        _day(date(2023, 5, 7)), DateSpan(date(2023, 2, 28), date(2023, 3, 8))]


def test_asked_dates_parse() -> None:
    noon = int(datetime(2023, 4, 1, 8, 30, tzinfo=UTC).timestamp() * 1000)
    assert asked_ms("2023/04/01 (Sat) 08:30") == noon
    assert asked_ms("2023-04-01T08:30") == noon
    assert asked_ms("2023-04-01") == noon - (8 * 60 + 30) * 60_000
    assert asked_ms("2023-02-30") is None and asked_ms(None) is None and asked_ms("soon") is None


def _workspace(root: Path) -> Path:
    mem = root / "memory"
    mem.mkdir(parents=True)
    for d in ("2023-02-11", "2023-03-04", "2023-03-18", "2023-03-25"):
        (mem / f"{d}.md").write_text(
            f"# {d}\n\nBought a new item for the competition today and put it on the shelf.\n")
    return root


def test_the_asked_day_decides_which_diary_answers(tmp_path: Path) -> None:
    question = "I bought something for the competition four weeks ago. What was it?"
    base = profile_settings("default", "none")
    with MemoryIndex.open(_workspace(tmp_path), provider="none") as idx:
        idx.sync()
        firsts = {}
        for asked in ("2023-04-01", "2023-04-22", "2023-03-11"):
            s = replace(base, now_ms=asked_ms(asked))
            firsts[asked] = idx.search(question, settings=s).hits[0].path
        reference = idx.search(question, settings=replace(
            profile_settings("reference", "none"), now_ms=asked_ms("2023-04-01"))).hits
    assert firsts == {"2023-04-01": "memory/2023-03-04.md", "2023-04-22": "memory/2023-03-25.md",
                      "2023-03-11": "memory/2023-02-11.md"}
    # the reference profile has no date hint: its scores do not depend on the asked day
    assert reference and all("date" not in h.components for h in reference)


def test_an_evaluation_asks_each_question_on_its_own_day() -> None:
    s = profile_settings("default", "none")
    q = EvalQuery("q1", "four weeks ago?", "temporal", (), now_ms=asked_ms("2023-04-01"))
    assert asked_settings(s, q).now_ms == asked_ms("2023-04-01")
    assert asked_settings(s, replace(q, now_ms=None)) is s
