"""Fusion's tail (issue #20 item 4): one pipeline whose order per fusion is data.

The orders themselves are checked by their effects, where two orders give different answers:
the reference's relaxed fallback comes before keyword-only filling and ends the tail, filling
follows the gate, and MMR reorders before the cut to maxResults. Pure:
hand-built candidates, no index.
"""

from __future__ import annotations

from dataclasses import replace
from typing import get_args

from memory_core import fuse, profile_settings
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.fusion import FUSIONS, STEPS, TAILS, TailStep
from memory_core.storage.fts import rank_to_score


def _cands(vector: list[tuple[str, float]], keyword: list[tuple[str, float]]) -> Candidates:
    ids = {i for i, _ in vector} | {i for i, _ in keyword}
    chunks = {i: ChunkInfo(i, f"memory/{i}.md", "memory", 1, 2, f"text {i}") for i in ids}
    return Candidates("q", "hybrid",
                      tuple(LegHit(i, s, n + 1, s) for n, (i, s) in enumerate(vector)),
                      tuple(LegHit(i, rank_to_score(r), n + 1, r)
                            for n, (i, r) in enumerate(keyword)), chunks, 200)


def test_every_tail_names_known_steps_and_every_fusion_has_one() -> None:
    assert set(STEPS) == set(get_args(TailStep))
    assert all(step in STEPS for tail in TAILS.values() for step in tail)
    assert set(FUSIONS) <= set(TAILS)
    # the reference's orders, as spec §4.2/§4.5 give them
    assert TAILS["reference"] == ("decay", "sort", "mmr", "gate", "relaxed", "fill")
    assert TAILS["reference:fts-only"] == ("decay", "sort", "gate", "floor")
    assert TAILS["reference:vector-only"] == ("gate",)


def test_reference_relaxed_fallback_ends_the_tail_before_filling() -> None:
    """Nothing passes minScore, the keyword leg found ``b`` (both legs) and ``k`` (keyword
    only): the relaxed fallback returns both in merged order; filling, had it run before the
    fallback, would have given ``k`` alone."""
    s = replace(profile_settings("reference"), keyword_only_fill=True, min_score=0.9)
    c = _cands([("a", 0.5), ("b", 0.4)], [("b", -4.0), ("k", -9.0)])
    assert [h.id for h in fuse(c, s).hits] == ["b", "k"]


def test_filling_follows_the_gate_when_something_passes() -> None:
    """``a`` passes; the keyword-only ``k`` fills a free slot after it, never before."""
    s = replace(profile_settings("reference"), keyword_only_fill=True, min_score=0.35)
    c = _cands([("a", 0.9)], [("k", -9.0)])
    assert [h.id for h in fuse(c, s).hits] == ["a", "k"]
    assert [h.id for h in fuse(c, replace(s, keyword_only_fill=False)).hits] == ["a"]


def test_mmr_reorders_before_the_cut() -> None:
    """Two identical chunks and a different one: with MMR the different one comes second, and
    the cut to two results keeps it (without MMR the duplicate is kept)."""
    s = replace(profile_settings("default"), calibration="", mmr_enabled=True, mmr_lambda=0.5,
                max_results=2, min_score=0.0, date_hint=0.0)
    chunks = {"a": ChunkInfo("a", "memory/a.md", "memory", 1, 2, "deploy the router today"),
              "b": ChunkInfo("b", "memory/b.md", "memory", 1, 2, "deploy the router today"),
              "c": ChunkInfo("c", "memory/c.md", "memory", 1, 2, "quarterly budget review")}
    c = Candidates("q", "hybrid", (LegHit("a", 0.9, 1, 0.9), LegHit("b", 0.89, 2, 0.89),
                                   LegHit("c", 0.8, 3, 0.8)), (), chunks, 200)
    assert [h.id for h in fuse(c, s).hits] == ["a", "c"]
    assert [h.id for h in fuse(c, replace(s, mmr_enabled=False)).hits] == ["a", "b"]


def test_fusion_records_the_step_that_removed_each_hit() -> None:
    """Every removed hit says which step removed it (issue #32), so no face works it out
    again from scores: the gate, the cut to maxResults, and a calibrated abstention, which
    the workbench labelled "past maxResults" when it read the scores."""
    from workbench.tuning import ABSTAINED, CUT, GATED, hit_status, removed_counts

    s = replace(profile_settings("reference"), min_score=0.5, max_results=1)
    c = _cands([("a", 0.95), ("b", 0.9), ("c", 0.1)], [("a", -9.0), ("b", -8.0), ("c", -1.0)])
    res = fuse(c, s)
    assert [h.id for h in res.hits] == ["a"] and res.hits[0].removed_by == ""
    marks = {h.id: h.removed_by for h in res.below_gate}
    assert marks == {"b": "maxResults", "c": "gate"}
    assert {h.id: hit_status(h) for h in res.below_gate} == {"b": CUT, "c": GATED}
    assert res.below_gate[0].to_result(True)["explain"]["removedBy"] == "maxResults"  # type: ignore[index]
    dflt = profile_settings("default")
    assert dflt.calibration and dflt.min_score == 0.0
    c = replace(c, keyword_rows=3)  # the OR query's counts are known: calibration applies
    abstained = fuse(c, replace(dflt, abstain_below=1.0))  # no probability reaches 1
    assert abstained.hits == [] and abstained.abstention.startswith("nothing relevant")
    assert {h.removed_by for h in abstained.below_gate} == {"abstention"}
    assert removed_counts(abstained) == {GATED: 0, CUT: 0, ABSTAINED: 3}
