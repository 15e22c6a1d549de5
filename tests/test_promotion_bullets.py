"""How the default profile's promoted bullet reads (issue 25, the demo's bullets).

A diary wraps a list item over several physical lines (continuation lines indented); the
bullet is the whole item, not the physical line a query chose, which stopped mid-sentence.
Several chosen items share one bullet line, each without its list marker and separated by
``ITEM_SEPARATOR``, not run together as "A. - B.". The reference profile is untouched
(tests/test_reference_goldens.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.promotion.memory_file import promotion_markers
from memory_core.promotion.policy import ITEM_SEPARATOR, logical_items, memory_lines

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

DIARY = """# 2026-11-29

## Rate limiting

- The `Retry-After` header says 60 seconds, but our backoff started at 2s and retried 5 times,
  which made it worse: each 429 turned into five more hits.
- Per-domain counters in Redis confirmed nine requests a second to each host.
- Changed the crawler concurrency from 8 to 4 on both crawl hosts,
  after the vendor asked us to.
  - a nested item stays its own item.
"""

RETRY = ("- The `Retry-After` header says 60 seconds, but our backoff started at 2s and retried "
         "5 times, which made it worse: each 429 turned into five more hits.")
CONCURRENCY = ("- Changed the crawler concurrency from 8 to 4 on both crawl hosts, after the "
               "vendor asked us to.")


def test_a_wrapped_list_item_is_one_item() -> None:
    lines = DIARY.split("\n")
    items = logical_items(lines)
    assert RETRY in items and CONCURRENCY in items
    assert "  - a nested item stays its own item." in items
    assert "## Rate limiting" in items
    # a query matching the head line brings the continuation, and one matching only the
    # continuation chooses the same item
    assert memory_lines(lines, ["backoff retried five times"])[0] == RETRY[2:]
    assert memory_lines(lines, ["which 429 turned into more hits"])[0] == RETRY[2:]
    # bounded by the range: a range ending on the head keeps the head alone
    assert memory_lines(lines[:5], ["backoff retried five times"])[0] == lines[4][2:]


def test_continuation_rules() -> None:
    # a blank line ends an item; a heading takes no continuation; a junk continuation line
    # (a stack frame) drops alone, a junk head (a command) drops its whole item
    lines = ["Error: the export failed on the nightly run",
             "    at exportAll (/srv/app/export.js:41:7)",
             "",
             "    an indented line after a blank is not a continuation",
             "# Heading",
             "  indented under a heading",
             "- $ git push --force origin main",
             "  and its wrapped arguments",
             "- The VPN is flaky on Mondays."]
    assert logical_items(lines) == [
        "Error: the export failed on the nightly run",
        "    an indented line after a blank is not a continuation",
        "# Heading",
        "  indented under a heading",
        "- The VPN is flaky on Mondays."]
    assert len(logical_items(lines, keep_junk=True)) == 6


def test_items_of_one_bullet_are_separated_without_inner_markers() -> None:
    lines = ["- The boat is moored at pier 9 in Kiel.",
             "- Ann's pottery classes are on Tuesdays.",
             "1. The harbour crane was inspected on Friday."]
    got = memory_lines(lines, ["Where is the boat moored?", "When are the pottery classes?",
                               "When was the harbour crane inspected?"])[0]
    assert got == ITEM_SEPARATOR.join(["The boat is moored at pier 9 in Kiel.",
                                       "Ann's pottery classes are on Tuesdays.",
                                       "The harbour crane was inspected on Friday."])
    assert " - " not in got and "1. " not in got
    assert memory_lines(lines[:1])[0] == "The boat is moored at pier 9 in Kiel."


def test_the_default_promotes_whole_items_as_one_parseable_bullet(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-29.md").write_text(DIARY, encoding="utf-8")
    with MemoryIndex.open(ws, provider="none", profile="default") as idx:
        idx.sync()
        for i, q in enumerate(["why did the backoff make the 429s worse",
                               "how many times did our backoff retry",
                               "why was crawler concurrency changed from 8 to 4",
                               "who asked us to change the crawler concurrency"]):
            hits = idx.search(q).hits[:1]
            assert hits, q
            pr.record_search(idx, q, hits, now=NOW - timedelta(hours=i + 1))
        cands = [c for c in pr.list_candidates(idx, now=NOW, min_score=0.0,
                                               check_duplicates_of="none") if c.passed]
        plan = pr.preview_apply(idx, cands, now=NOW)
        assert plan.skipped == {}
        assert [e.bullet for e in plan.entries] == [
            "- " + RETRY[2:] + ITEM_SEPARATOR + CONCURRENCY[2:]]
        before = (ws / "MEMORY.md").read_bytes() if (ws / "MEMORY.md").exists() else None
        pr.apply(idx, plan, now=NOW)
        text = (ws / "MEMORY.md").read_text(encoding="utf-8")
        # one bullet line under its marker: the marker is found, undo takes it back whole
        assert text.count("\n- ") == 1 and plan.entries[0].bullet + "\n" in text
        assert promotion_markers(text) == [plan.entries[0].key]
        pr.undo(idx, now=NOW + timedelta(minutes=1))
        after = (ws / "MEMORY.md").read_bytes() if (ws / "MEMORY.md").exists() else None
    assert after == before
