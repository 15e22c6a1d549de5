"""The default profile against the reference, on the demo workspace and on synthetic candidates.

The reference profile must stay OpenClaw 2026.5.20 to the constant; the default profile must do
what docs/retrieval.md claims: find natural-language and Chinese queries, never let weak vector
hits drown a strong keyword hit, keep minScore's meaning across corpus sizes, stem English, and
prefer the diary of a date the question names. Nothing here is mocked: the demo (copies indexed once
by conftest's fixtures) runs the real engine with the local model, the synthetic cases run the real
fusion.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.config import SearchSettings, profile_settings
from memory_core.base.dates import path_date
from memory_core.evaluation import load_query_set, run_eval
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.fusion import fuse
from memory_core.read.query import DateSpan, date_closeness, date_hints


def test_reference_profile_keeps_the_reference_constants() -> None:
    r = profile_settings("reference")
    assert r == SearchSettings()
    assert (r.vector_weight, r.text_weight, r.min_score, r.max_results) == (0.7, 0.3, 0.35, 6)
    assert (r.candidate_multiplier, r.fusion, r.keyword_query) == (4, "reference", "and")
    assert not r.cjk_bigrams and not r.keyword_only_fill and r.date_hint == 0.0


def test_default_profile_settings() -> None:
    d = profile_settings("default")
    assert d.fusion == "normalized" and d.keyword_query == "or" and d.cjk_bigrams
    assert d.max_results == 6 and d.normalized_weights() == pytest.approx((0.65, 0.35))
    assert 0 <= d.min_score < 0.35 * 1.0  # the best keyword match (≥ 0.35) always passes
    assert d.date_hint > 0
    # MiniLM reads no Chinese: a mostly-CJK query keeps equal weights; e5 reads it
    assert d.weights_for("连接池是什么时候改的？") == pytest.approx((0.5, 0.5))
    assert d.weights_for("Dana 什么时候离职？") == pytest.approx((0.5, 0.5))
    assert d.weights_for("when did we change the 连接池?") == pytest.approx((0.65, 0.35))
    e5 = profile_settings("default", "e5")
    assert e5.weights_for("连接池是什么时候改的？") == pytest.approx(e5.normalized_weights())


def test_a_cjk_query_fuses_with_its_own_weights() -> None:
    """The same candidates under an English and a Chinese query: the vector-only hit wins the
    English one (0.65 × its cosine) and loses the Chinese one to the keyword-only hit."""
    chunks = {i: ChunkInfo(i, f"memory/{i}.md", "memory", 1, 2, f"text {i}") for i in "vk"}
    s = replace(profile_settings("default"), calibration="", abstain_below=0.0, vector_floor=0.0)

    def order(query: str) -> list[str]:
        cands = Candidates(query, "hybrid", (LegHit("v", 0.9, 1, 0.9),),
                           (LegHit("k", 0.5, 1, -2.0),), chunks, 200)
        return [h.id for h in fuse(cands, s).hits]

    assert order("which colleague is leaving?") == ["v", "k"]  # 0.585 against 0.35
    assert order("哪位同事要离职？") == ["k", "v"]  # 0.45 against 0.5


# ----------------------------------------------------------------------------- the demo


@pytest.fixture(scope="module")
def demo_reports(indexed_demo: Path, indexed_demo_reference: Path) -> dict[str, object]:
    """Both profiles on copies of the demo (conftest's shared indexes), real local model."""
    qs = load_query_set("demo")
    return {p: run_eval(ws, qs, profile_settings(p), profile=p, legs=True)
            for p, ws in (("default", indexed_demo), ("reference", indexed_demo_reference))}


def test_default_beats_reference_on_the_demo_queries(demo_reports: dict[str, object]) -> None:
    d = demo_reports["default"].metrics  # type: ignore[attr-defined]
    r = demo_reports["reference"].metrics  # type: ignore[attr-defined]
    assert d["n_queries"] == r["n_queries"] == 27
    assert d["chunk"]["success@5"] >= r["chunk"]["success@5"] + 0.25
    assert d["chunk"]["recall@5"] >= r["chunk"]["recall@5"] + 0.25
    # the default abstains when its best hit is unlikely to be relevant (issue #21): the demo's
    # paraphrases the legs do not find (and one Chinese question) get nothing, the rest answers
    assert d["zero_result_rate"] < r["zero_result_rate"]
    for kind in ("keyword", "session"):
        assert d["by_category"][kind]["zero_result_rate"] == 0.0
    assert d["by_category"]["chinese"]["chunk"]["success@5"] == 1.0
    assert r["by_category"]["chinese"]["chunk"]["success@5"] == 0.0
    # and it is not worse than either of its legs alone
    runs = {run.label: run.metrics for run in demo_reports["default"].runs}  # type: ignore
    for leg in ("vector leg", "keyword leg (or+bigrams)"):
        assert d["chunk"]["success@5"] >= runs[leg]["chunk"]["success@5"] - 0.01


def test_cjk_keyword_found_by_the_default_keyword_leg_only(indexed_demo: Path) -> None:
    """连接池 sits inside a longer Chinese run: one unicode61 token that the AND query misses."""
    with MemoryIndex.open(indexed_demo, profile="default") as idx:
        gold = ("memory/2026-10-27.md", 16)

        def keyword_paths(settings: SearchSettings) -> list[tuple[str, int, int]]:
            c = idx.candidates("连接池", settings=settings)
            return [(c.chunks[h.id].path, c.chunks[h.id].start_line, c.chunks[h.id].end_line)
                    for h in c.keyword]

        default_hits = keyword_paths(profile_settings("default"))
        reference_hits = keyword_paths(profile_settings("reference"))
    assert any(p == gold[0] and s <= gold[1] <= e for p, s, e in default_hits[:3])
    assert not any(p == gold[0] and s <= gold[1] <= e for p, s, e in reference_hits)


def test_default_keyword_leg_stems_english(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-05.md").write_text("# Monday\n\nWe went camping near the lake.\n")
    (ws / "memory" / "2026-01-06.md").write_text("# Tuesday\n\nThe router was rebooted.\n")
    with MemoryIndex.open(ws, provider="none", profile="default") as idx:
        idx.sync()
        hits = idx.search("Where did they camp?").hits
        assert hits and hits[0].path == "memory/2026-01-05.md"
        ref = idx.candidates("Where did they camp?", settings=profile_settings("reference"))
        assert not ref.keyword  # the reference's AND query on the unstemmed table


# ----------------------------------------------------------------------------- fusion


def _chunk(cid: str, path: str = "memory/notes.md") -> ChunkInfo:
    return ChunkInfo(cid, path, "memory", 1, 5, f"text of {cid}")


def test_weak_vector_hits_never_drown_a_strong_keyword_hit() -> None:
    # A Chinese query against an English-only model: ten unrelated vector hits with middling
    # cosines (the first just above the reference's 0.5); the keyword leg's only hit is the answer.
    chunks = {f"v{i}": _chunk(f"v{i}", f"memory/v{i}.md") for i in range(10)}
    chunks["gold"] = _chunk("gold", "memory/gold.md")
    vector = tuple(LegHit(f"v{i}", 0.55 - 0.01 * i, i + 1, 0.55 - 0.01 * i) for i in range(10))
    keyword = (LegHit("gold", 0.2, 1, -0.25),)  # a tiny BM25: small corpus
    cands = Candidates("连接池", "hybrid", vector, keyword, chunks, 200)
    d = fuse(cands, profile_settings("default"))
    assert d.hits[0].id == "gold"
    r = fuse(cands, profile_settings("reference"))
    assert "gold" not in [h.id for h in r.hits]  # 0.3 × 0.2 < minScore 0.35: gated


def test_min_score_means_the_same_on_small_and_large_corpora() -> None:
    def cands(scale: float) -> Candidates:
        chunks = {c: _chunk(c, f"memory/{c}.md") for c in ("a", "b", "c")}
        raws = {"a": -1.0 * scale, "b": -0.5 * scale, "c": -0.1 * scale}
        keyword = tuple(LegHit(c, 0.0, i + 1, raw) for i, (c, raw) in enumerate(raws.items()))
        return Candidates("q", "hybrid", (LegHit("zz", 0.1, 1, 0.1),), keyword,
                          {**chunks, "zz": _chunk("zz", "memory/zz.md")}, 200)

    s = replace(profile_settings("default"), min_score=0.1)  # the profile has no gate (#14)
    small, large = fuse(cands(0.2), s), fuse(cands(25.0), s)
    assert [(h.id, round(h.score, 6)) for h in small.hits] == [
        (h.id, round(h.score, 6)) for h in large.hits]
    assert {h.id for h in small.hits} == {"a", "b"}  # c: 0.5 × 0.1 = 0.05 < 0.1, zz: 0 (floor)


def test_date_hint_prefers_the_diary_of_the_named_day() -> None:
    chunks = {"other": _chunk("other", "memory/2026-11-03.md"),
              "that_day": _chunk("that_day", "memory/2026-10-27.md")}
    keyword = (LegHit("other", 0.5, 1, -1.0), LegHit("that_day", 0.5, 2, -1.0))
    cands = Candidates("What broke on 27 October 2026?", "fts-only", (), keyword, chunks, 200)
    d = fuse(cands, profile_settings("default"))
    assert [h.id for h in d.hits] == ["that_day", "other"]
    assert d.hits[0].components["date"] == pytest.approx(profile_settings("default").date_hint)
    no_hint = fuse(cands, SearchSettings(**{**profile_settings("default").__dict__,
                                           "date_hint": 0.0}))
    assert [h.id for h in no_hint.hits] == ["other", "that_day"]


def test_date_hints_parse_absolute_dates_only() -> None:
    assert date_hints("What did Gina find on 1 February, 2023?") == [
        DateSpan(date(2023, 2, 1), date(2023, 2, 1))]
    assert date_hints("painting shown on October 13, 2023") == [
        DateSpan(date(2023, 10, 13), date(2023, 10, 13))]
    assert date_hints("what happened in May 2023") == [
        DateSpan(date(2023, 5, 1), date(2023, 5, 31))]
    assert date_hints("报表 2026年11月17日 改了") == [
        DateSpan(date(2026, 11, 17), date(2026, 11, 17))]
    assert date_hints("camping in June?") == [DateSpan(month=6)]
    assert date_hints("May I ask what happened yesterday?") == []
    # an impossible day falls back to its month
    assert date_hints("on 31 February 2023") == [DateSpan(date(2023, 2, 1), date(2023, 2, 28))]
    assert path_date("sessions/2023-05-08.jsonl") == date(2023, 5, 8)
    assert path_date("MEMORY.md") is None
    one_day = [DateSpan(date(2023, 5, 1), date(2023, 5, 1))]
    assert date_closeness(one_day, date(2023, 5, 1)) == 1.0
    assert date_closeness(one_day, date(2023, 5, 8)) == pytest.approx(0.5)
