"""Multi-aspect questions: the best chunk of each event a question names rises to the top.

"Which event did I attend first, the pottery workshop or the salsa dance class?" names two
events told in two sessions; here both legs rank the salsa class 7th, below five chunks that
share the question's frame words ("attend", "workshop", "event"). With the aspect step on, the
chunk that best covers each named event gains a bonus and both are in the first three; a
question naming one event, and the step at 0, leave the order as it was. The real fusion on
hand-built candidates, nothing mocked.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from memory_core.base.config import profile_settings
from memory_core.read import aspects
from memory_core.read.aspects import split_aspects, stem
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.fusion import fuse

QUERY = "Which event did I attend first, the pottery workshop or the salsa dance class?"
TEXTS = {
    "pottery": "user: I finally went to the pottery workshop downtown, we threw bowls.",
    **{f"d{i}": f"user: I want to attend an event about workshop planning number {i}."
       for i in range(5)},
    "salsa": "user: Tonight was my first salsa dance class, my feet hurt.",
    **{f"x{i}": f"user: groceries and chores, list {i}." for i in range(4)},
}
ORDER = ["pottery", "d0", "d1", "d2", "d3", "d4", "salsa", "x0", "x1", "x2", "x3"]


def _cands(query: str = QUERY) -> Candidates:
    chunks = {cid: ChunkInfo(cid, f"memory/2023-05-{i + 1:02d}-{cid}.md", "memory", 1, 3, t)
              for i, (cid, t) in enumerate(TEXTS.items())}
    vector = tuple(LegHit(cid, 0.8 - 0.04 * i, i + 1, 0.8 - 0.04 * i)
                   for i, cid in enumerate(ORDER))
    keyword = tuple(LegHit(cid, 0.5, i + 1, -(10.0 - 0.8 * i)) for i, cid in enumerate(ORDER))
    return Candidates(query, "hybrid", vector, keyword, chunks, 200)


def _order(query: str, bonus: float, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(aspects, "ASPECT_BONUS", bonus)
    s = replace(profile_settings("default"), calibration="", max_results=11)
    return [h.id for h in fuse(_cands(query), s).hits]


def test_each_named_event_gets_a_top_place(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _order(QUERY, 0.0, monkeypatch) == ORDER  # off: the legs' order
    on = _order(QUERY, 0.3, monkeypatch)
    assert on.index("pottery") == 0 and on.index("salsa") <= 2
    assert sorted(on) == sorted(ORDER)  # a re-ranking: nothing added or lost


def test_a_question_naming_one_event_keeps_its_order(monkeypatch: pytest.MonkeyPatch) -> None:
    one = "How many days ago did I attend the salsa dance class?"
    assert split_aspects(one) == []
    assert _order(one, 0.3, monkeypatch) == _order(one, 0.0, monkeypatch)


def test_aspects_are_the_parts_between_connectives() -> None:
    got = split_aspects(QUERY)
    assert frozenset({"pottery", "workshop"}) in got
    assert frozenset({"salsa", "dance", "class"}) in got
    assert stem("workshops") == stem("workshop") and stem("attended") == stem("attend")
    assert stem("class") == "class"  # a double s is no plural
