"""The OR keyword query leaves a question's frame out ("how many", "days ago", "lately").

LongMemEval's questions wrap their topic in a frame that notes rarely share with the answer
but that unrelated notes hold ("How many days ago did I renew my magazine subscription
lately?"); in an OR query those words lift notes sharing only them above the one note about
the magazine (issue #36). A real index and the real keyword leg, nothing mocked.
"""

from __future__ import annotations

from pathlib import Path

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.read.query import keyword_text, or_fts_query

QUESTION = "How many days ago did I renew my magazine subscription lately?"


def _workspace(root: Path) -> Path:
    mem = root / "memory"
    mem.mkdir()
    for i in range(3):  # the frame's words only
        (mem / f"talk-{i}.md").write_text(
            f"# Note {i}\n\nHow many days ago was that? Many days, weeks ago, lately.\n")
    for i in range(12):
        (mem / f"chores-{i}.md").write_text(
            f"# Chores {i}\n\nWashed the dishes and walked the dog, round {i}.\n")
    (mem / "post.md").write_text(
        "# Post\n\nThe magazine subscription renewal arrived in the mail today, along with a "
        "long letter from the bank about my savings account and the new card.\n")
    return root


def test_the_frame_no_longer_outranks_the_topic(tmp_path: Path) -> None:
    with MemoryIndex.open(_workspace(tmp_path), provider="none") as idx:
        idx.sync()
        assert idx.settings().drop_question_frame  # the default profile's
        before = [h.path for h in idx.search(QUESTION, drop_question_frame=False).hits]
        after = [h.path for h in idx.search(QUESTION).hits]
    assert before[0].startswith("memory/talk-")  # the frame's words won
    assert after[0] == "memory/post.md"
    assert not profile_settings("reference").drop_question_frame


def test_the_keyword_query_keeps_the_topic() -> None:
    match = or_fts_query(keyword_text(QUESTION)) or ""
    assert '"magazine"' in match and '"subscription"' in match
    assert not {'"many"', '"days"', '"ago"', '"lately"'} & set(match.split(" OR "))
    # a question that is all frame keeps its words: an empty keyword leg would answer nothing
    assert keyword_text("How many days ago?") == "How many days ago?"
