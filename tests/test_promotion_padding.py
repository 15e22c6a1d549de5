"""The default profile's guards against promoting padding (issue 25 item 1: junk <= 5 %).

A search returns up to six hits whether or not six are relevant; the reference records each
as a recall, and its diversity gate (max(queries, days) >= 3) lets one question asked on three
days promote whatever came back with it. The default wants three distinct queries, writes the
line(s) each query matches best (if it matches enough of the query), and skips a range fewer
than two queries choose a line of; it can count only a search's first hits (``recall_top_k``,
which cross-validation left at all of them).
"""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.evaluation import dreaming as dr
from memory_core.promotion.policy import DEFAULT, policy_for, tuned

from .conftest import ROOT

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# the cross-validation that chose the default's thresholds lives with its script
_spec = importlib.util.spec_from_file_location("tune_dreaming",
                                               ROOT / "scripts" / "tune_dreaming.py")
assert _spec is not None and _spec.loader is not None
tune = sys.modules["tune_dreaming"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tune)


def _workspace(tmp_path: Path, profile: str, days: int = 8) -> MemoryIndex:
    ws = tmp_path / profile
    (ws / "memory").mkdir(parents=True)
    for i in range(days):
        d = (NOW - timedelta(days=days - i)).date().isoformat()
        (ws / "memory" / f"{d}.md").write_text(
            f"# {d}\n\nThe harbour crane {i} was inspected by the night shift.\n\n"
            f"Lunch was soup number {i}.\n", encoding="utf-8")
    idx = MemoryIndex.open(ws, provider="none", profile=profile)
    idx.sync()
    return idx


def test_recall_top_k_counts_only_a_searchs_first_hits(tmp_path: Path) -> None:
    # the setting cross-validation tried (docs/promotion.md section 6); the default ships 0,
    # every hit a recall, as in the reference
    recorded = {}
    for profile in ("reference", "default"):
        with _workspace(tmp_path, profile) as idx, tuned(recall_top_k=3):
            hits = idx.search("harbour crane inspected").hits
            assert len(hits) > 3, hits
            recorded[profile] = (len(hits), pr.record_search(idx, "harbour crane inspected",
                                                             hits, now=NOW))
    assert recorded["reference"][1] == recorded["reference"][0]  # every hit is a recall
    assert recorded["default"][1] == 3
    assert DEFAULT.recall_top_k == 0


def test_one_question_on_three_days_promotes_in_the_reference_only(tmp_path: Path) -> None:
    reasons = {}
    for profile in ("reference", "default"):
        with _workspace(tmp_path, profile, days=2) as idx:
            for day in range(3):
                q = "harbour crane inspected"
                pr.record_search(idx, q, idx.search(q).hits[:1], now=NOW - timedelta(days=day))
            (c,) = [c for c in pr.list_candidates(idx, now=NOW, min_score=0.0,
                                                  check_duplicates_of="none")
                    if c.recall_count][:1]
            reasons[profile] = c.reasons
    assert reasons["reference"] == []  # diversity counts the three days
    assert reasons["default"] == ["distinct queries 1 < 3 (the default profile's "
                                  "minDistinctQueries)"]


def test_a_range_sharing_no_word_with_its_queries_is_not_written(tmp_path: Path) -> None:
    with _workspace(tmp_path, "default", days=1) as idx:
        hit = idx.search("harbour crane").hits[0]
        for i, q in enumerate(["zebra", "quokka", "axolotl"]):  # it came back as padding
            pr.record_search(idx, q, [hit], now=NOW - timedelta(days=i))
        cands = pr.list_candidates(idx, now=NOW, min_score=0.0, check_duplicates_of="none")
        plan = pr.preview_apply(idx, [c for c in cands if c.passed], now=NOW)
    assert not plan.entries
    assert list(plan.skipped.values()) == [
        "no line of it shares a word with the queries that recalled it"]


def test_tuned_changes_the_default_only_inside_its_block(tmp_path: Path) -> None:
    with _workspace(tmp_path, "default", days=1) as idx:
        with tuned(recall_top_k=0, min_distinct_queries=2) as p:
            assert policy_for(idx) is p and p.recall_top_k == 0 and p.clean_lines
        assert policy_for(idx) is DEFAULT


def _run(saved: int, junk: int, conv: str) -> dr.DreamingRun:
    return dr.DreamingRun("default", [conv], asks=100, saved=saved, bullets=100, junk=junk,
                          budget=10)


def test_cross_validation_chooses_on_the_other_conversations() -> None:
    # setting 0 saves most but is junky everywhere; setting 1 is clean except on conv-b,
    # where setting 2 is the clean one
    per = [{"conv-a": _run(50, 20, "conv-a"), "conv-b": _run(50, 20, "conv-b"),
            "conv-c": _run(50, 20, "conv-c")},
           {"conv-a": _run(30, 0, "conv-a"), "conv-b": _run(30, 14, "conv-b"),
            "conv-c": _run(30, 0, "conv-c")},
           {"conv-a": _run(20, 2, "conv-a"), "conv-b": _run(20, 0, "conv-b"),
            "conv-c": _run(20, 2, "conv-c")}]
    cv = tune.cross_validate(per, [{"k": 0}, {"k": 1}, {"k": 2}])
    # held out conv-a: on b+c setting 1 has 7 % junk, so setting 2 (1 %) is chosen
    assert cv.chosen == {"conv-a": 2, "conv-b": 1, "conv-c": 2}
    assert cv.held_out.asks == 300 and cv.held_out.saved == 20 + 30 + 20
    assert cv.held_out.junk == 2 + 14 + 2
    assert [r.saved for r in cv.pooled] == [150, 90, 60]
    assert cv.final == 1  # pooled, its junk is 14 / 300 = 4.7 % and it saves more than 2
    # a setting must save more than the reference: at 25 % saved only setting 0 does, and
    # with none clean among the eligible, the least junk of them is chosen
    ref = {c: dr.DreamingRun("reference", [c], asks=100, saved=40) for c in per[0]}
    assert tune.cross_validate(per, [{"k": 0}, {"k": 1}, {"k": 2}], ref).chosen == {
        "conv-a": 0, "conv-b": 0, "conv-c": 0}


def test_the_saved_evaluation_is_what_the_docs_report() -> None:
    runs, meta = dr.saved_evaluation()
    ref, dflt = runs
    assert (ref.profile, dflt.profile) == ("reference", "default")
    assert sorted(dflt.conversations) == sorted(ref.conversations)
    assert len(dflt.conversations) == 5 and dflt.asks == ref.asks
    # the figures the generated module held, now the package data file's (session 8)
    assert (ref.asks, meta["dataset"]) == (2079, "LoCoMo dev (Markdown), 5 conversations")
    # held out, the default saves more later searches than the reference with junk <= 5 %
    # of its bullets (issue 25's acceptance, docs/promotion.md section 6)
    assert dflt.saved_share > ref.saved_share
    assert dflt.junk_share <= tune.MAX_JUNK < ref.junk_share
    assert dflt.within_budget and ref.within_budget
    assert set(meta["chosen"]) == set(dflt.conversations)
    assert {k: getattr(DEFAULT, k) for k in meta["final"]} == meta["final"]
    table = dr.dreaming_table(runs)
    assert f"| default | {dflt.asks} | {dflt.saved_share:.1%} |" in table


def test_a_question_line_brings_its_answer() -> None:
    from memory_core.promotion.policy import ITEM_SEPARATOR, memory_lines

    chunk = ["[D1:1] Ann: Hi Bob, how was the week?",
             "[D1:2] Bob: Busy. Ann, the boat is now moored at pier 9 in Kiel.",
             "[D1:3] Ann: Nice. Which pottery classes do you take? [shares image: a vase]",
             "[D1:4] Bob: The Tuesday ones at the harbour studio.",
             "[D1:5] Ann: Bob, see you soon."]
    # the query matches the question; the fact is in the reply
    assert memory_lines(chunk, ["What pottery classes does Bob take?"])[0] == \
        ITEM_SEPARATOR.join(chunk[2:4])
    assert memory_lines(chunk, ["Where did Bob moor the boat?"])[0] == chunk[1]


def test_each_query_chooses_its_own_line_weighed_over_the_diary() -> None:
    from memory_core.promotion.policy import ITEM_SEPARATOR, memory_lines

    chunk = ["[D16:5] Caroline: My work helps the community. It inspires me to keep making art.",
             "[D16:6] Melanie: Wow, that looks awesome! How long have you been creating art?",
             "[D16:7] Caroline: Since I was 17 or so. Art shows what words cannot. How long "
             "have you been into art?",
             "[D16:8] Melanie: Seven years now, and I found my muses: painting and pottery.",
             "[D16:9] Caroline: Those bowls are amazing. Creating art helped me explore.",
             "[D16:10] Melanie: Thanks! It is both an outlet and a form of therapy."]
    queries = ["What does Melanie do to keep busy?", "How long has Caroline been creating art?"]
    # "long" and "creating" are on two of six lines: still what tells the lines apart (a
    # rule dropping every word on more than a quarter of the lines kept only "keep")
    got = memory_lines(chunk, queries)[0]
    assert chunk[1] in got and chunk[2] in got  # the question, and the line answering it
    # the first query matches a third of itself ("keep"; "busy" is nowhere): below half, it
    # chooses no line. The second chooses the answer (D16:7), which matches the question's
    # words too; it brings the question, and, asking back, the answer to that
    assert memory_lines(chunk, queries, min_share=0.5)[0] == ITEM_SEPARATOR.join(chunk[1:4])
    assert memory_lines(chunk, queries[:1], min_share=0.5) == (
        "", "no line of it matches 50% of a query that recalled it (the default profile's "
        "minMatchShare)")
    # wanting two queries that each choose a line: at half, only one does
    assert memory_lines(chunk, queries, min_share=0.5, min_queries=2) == (
        "", "only 1 of the queries that recalled it match 50% of themselves on a line of it "
        "(the default profile's minMatchingQueries: 2)")
    assert chunk[2] in memory_lines(chunk, queries, min_queries=2)[0]
    # inflections meet: "moored" answers "moor"
    assert memory_lines(["Ann: hi.", "Bob: the boat is moored at pier 9."],
                        ["Where did Bob moor the boat?"], min_share=0.9)[0] == \
        "Bob: the boat is moored at pier 9."


def test_a_chunk_opening_inside_a_line_is_promoted_in_the_default(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    filler = " ".join(f"word{i} filler text here." for i in range(300))  # one long line
    (ws / "memory" / "2026-11-29.md").write_text(
        f"# 2026-11-29\n\n{filler}\n\nThe harbour crane was inspected by the night shift.\n\n"
        "Lunch was soup.\n", encoding="utf-8")
    with MemoryIndex.open(ws, provider="none", profile="default") as idx:
        idx.sync()
        for q in ["harbour crane inspected", "crane inspected night shift",
                  "who inspected the harbour crane"]:
            hits = idx.search(q).hits[:1]
            assert hits[0].snippet.startswith("…")  # the bounded chunker's mark
            pr.record_search(idx, q, hits, now=NOW - timedelta(hours=1))
        cands = [c for c in pr.list_candidates(idx, now=NOW, min_score=0.0,
                                               check_duplicates_of="none") if c.passed]
        plan = pr.preview_apply(idx, cands, now=NOW)
    # the "…" is in no diary line: re-located as it was, the snippet was "no longer found"
    assert plan.skipped == {}
    assert [e.bullet for e in plan.entries] == [
        "- The harbour crane was inspected by the night shift."]


def test_a_range_matching_too_little_of_its_queries_is_not_written(tmp_path: Path) -> None:
    with _workspace(tmp_path, "default", days=1) as idx:
        hit = idx.search("harbour crane").hits[0]
        # each query shares one word with the diary; the rest of it is nowhere there
        for i, q in enumerate(["harbour zebra stripes", "harbour quokka smile",
                               "harbour axolotl gills"]):
            pr.record_search(idx, q, [hit], now=NOW - timedelta(days=i))
        cands = pr.list_candidates(idx, now=NOW, min_score=0.0, check_duplicates_of="none")
        with tuned(min_match_share=0.5):
            plan = pr.preview_apply(idx, [c for c in cands if c.passed], now=NOW)
        with tuned(min_match_share=0.0, min_matching_queries=1):
            loose = pr.preview_apply(idx, [c for c in cands if c.passed], now=NOW)
        with tuned(min_match_share=0.0, min_matching_queries=4):
            four = pr.preview_apply(idx, [c for c in cands if c.passed], now=NOW)
    assert not plan.entries
    assert list(plan.skipped.values()) == [
        "no line of it matches 50% of a query that recalled it (the default profile's "
        "minMatchShare)"]
    assert list(four.skipped.values()) == [
        "only 3 of the queries that recalled it match 0% of themselves on a line of it (the "
        "default profile's minMatchingQueries: 4)"]
    assert [e.bullet for e in loose.entries] == [
        "- The harbour crane 0 was inspected by the night shift."]
