"""Expansions measured by cross-validation (issue #14.2): the pure re-rankings, query
decomposition, PRF term selection and leg mixing, and their wiring through settings (off in
both profiles; the reference profile's candidates untouched)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from memory_core.base.config import profile_settings
from memory_core.evaluation import DEMO_WORKSPACE
from memory_core.index import MemoryIndex
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit
from memory_core.read.expansion import (
    boost_adjacent,
    diversify,
    feedback_terms,
    interpolate_keyword,
    max_keyword,
    split_query,
)
from memory_core.read.fusion import fuse


@dataclass
class H:
    path: str
    start_line: int
    end_line: int
    score: float
    components: dict[str, float] = field(default_factory=dict)


def test_diversity_lets_another_day_in() -> None:
    hits = [H("a.md", 1, 9, 0.9), H("a.md", 10, 19, 0.85), H("a.md", 20, 29, 0.8),
            H("b.md", 1, 9, 0.78)]
    out = diversify(hits, 0.1)
    assert [h.path for h in out] == ["a.md", "b.md", "a.md", "a.md"]
    assert out[2].components["diversity"] == pytest.approx(-0.1)
    assert out[3].score == pytest.approx(0.8 - 0.2)
    same = diversify([H("a.md", 1, 2, 0.5), H("b.md", 1, 2, 0.4)], 0.0)
    assert [h.path for h in same] == ["a.md", "b.md"]


def test_adjacent_chunks_share_a_bonus() -> None:
    a, b, c = H("a.md", 1, 10, 0.9), H("a.md", 11, 20, 0.2), H("a.md", 40, 50, 0.5)
    boost_adjacent([a, b, c], 0.1)
    assert b.score == pytest.approx(0.2 + 0.09)  # touches a
    assert a.score == pytest.approx(0.9 + 0.02)  # touches b (its score before any bonus)
    assert c.score == 0.5 and "adjacent" not in c.components


def test_split_query_on_coordinations() -> None:
    assert split_query("What have Melanie and her kids made?") == [
        "What have Melanie made?", "What have her kids made?"]
    assert split_query("When did Caroline meet her friends, family, and mentors?") == [
        "When did Caroline meet her friends, family?", "When did Caroline meet her friends, "
        "mentors?"]
    assert split_query("Where did Tom go?") == []
    assert split_query("他喜欢猫和狗吗") == []  # no word segmentation: not guessed


def _leg(pairs: list[tuple[str, float]]) -> tuple[LegHit, ...]:
    return tuple(LegHit(cid, raw / (raw + 1), i + 1, -raw) for i, (cid, raw) in enumerate(pairs))


def test_leg_mixing_keeps_a_bm25_like_scale() -> None:
    orig = _leg([("x", 10.0), ("y", 5.0)])
    exp = _leg([("z", 4.0), ("y", 2.0)])
    mixed = interpolate_keyword(orig, exp, 0.5)
    assert [h.id for h in mixed] == ["x", "y", "z"]  # x 0.5, y 0.25+0.25, z 0.5 → stable
    assert [h.rank for h in mixed] == [1, 2, 3]
    assert all(h.raw < 0 for h in mixed)
    assert interpolate_keyword(orig, exp, 0.0) == orig
    lifted = max_keyword(orig, [exp], 1.0)
    assert {h.id: -h.raw for h in lifted} == {"x": 1.0, "y": 0.5, "z": 1.0}


def test_feedback_terms_come_from_the_top_chunks() -> None:
    chunks = {
        "a": ChunkInfo("a", "a.md", "memory", 1, 3, "pottery class pottery bowls glaze kiln"),
        "b": ChunkInfo("b", "b.md", "memory", 1, 3, "the weather was sunny and warm"),
        "c": ChunkInfo("c", "c.md", "memory", 1, 3, "weather report for the weekend"),
    }
    cands = Candidates("pottery class", "hybrid", (), _leg([("a", 8.0), ("b", 1.0)]), chunks,
                       200)
    terms = feedback_terms(cands, 3, n_docs=1)
    assert "pottery" not in terms and "class" not in terms  # the query's own terms
    assert set(terms) <= {"bowls", "glaze", "kiln"} and len(terms) == 3


def test_profiles_leave_expansions_off() -> None:
    for name in ("reference", "default"):
        s = profile_settings(name)
        assert s.diversity == s.adjacent == s.decompose == 0.0 and s.prf_terms == 0


def test_prf_and_decomposition_change_only_the_keyword_leg() -> None:
    with MemoryIndex.open(DEMO_WORKSPACE) as idx:
        base = idx.settings()
        q = "router and firewall rules"
        plain = idx.candidates(q, settings=base)
        fb = idx.candidates(q, settings=replace(base, prf_terms=5, prf_weight=0.5))
        dec = idx.candidates(q, settings=replace(base, decompose=1.0))
    assert fb.vector == plain.vector and dec.vector == plain.vector
    assert fb.keyword != plain.keyword
    assert {h.id for h in plain.keyword} <= {h.id for h in fb.keyword}
    assert all(h.id in fb.chunks for h in fb.keyword)
    assert all(h.id in dec.chunks for h in dec.keyword)


def test_vector_floor_rescales_the_cosine() -> None:
    chunks = {c: ChunkInfo(c, f"memory/{c}.md", "memory", 1, 2, c) for c in ("a", "b")}
    vector = (LegHit("a", 0.85, 1, 0.85), LegHit("b", 0.80, 2, 0.80))
    cands = Candidates("q", "hybrid", vector, (), chunks, 200)
    s = replace(profile_settings("default"), vector_weight=1.0, text_weight=0.0, min_score=0.0,
                vector_floor=0.0, calibration="", abstain_below=0.0)  # the fused score itself
    plain = {h.id: h.components["vector"] for h in fuse(cands, s).hits}
    floored = {h.id: h.components["vector"] for h in
               fuse(cands, replace(s, vector_floor=0.75)).hits}
    assert plain == pytest.approx({"a": 0.85, "b": 0.80})
    assert floored == pytest.approx({"a": 0.4, "b": 0.2})  # (cos - 0.75) / 0.25
    assert profile_settings("default").vector_floor == 0.2  # chosen by cross-validation


def test_e5_gets_its_own_cosine_floor(tmp_path: Path) -> None:
    """The default profile's model-dependent constants follow the provider actually in use."""
    e5 = profile_settings("default", "e5")
    assert e5.vector_floor == 0.0 and e5.normalized_weights() == pytest.approx((0.9, 0.1))
    assert profile_settings("default", "local") == profile_settings("default")
    assert profile_settings("reference", "e5") == profile_settings("reference")
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "notes.md").write_text("# Notes\n\nThe router is in the attic.\n")
    with MemoryIndex.open(tmp_path, provider="e5") as idx:
        assert idx.settings().vector_weight == 0.9
    with MemoryIndex.open(tmp_path, provider="none") as idx:
        # keyword-only: the MiniLM calibration (and its abstention) does not apply (issue #21),
        # nor the best-block score (no vectors; issue #36)
        assert idx.settings() == replace(profile_settings("default"), calibration="",
                                         abstain_below=0.0, block_rescore=0)
