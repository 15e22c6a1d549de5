"""Chunking: the reference's exact boundaries (goldens from the real engine), bounded mode."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from memory_core.base.text import estimate_chars, utf16_len
from memory_core.write.chunking import Chunk, chunk_markdown, remap_chunk_lines, sha256_hex

from .conftest import GOLDENS


def _lines(chunks: list[Chunk]) -> list[tuple[int, int]]:
    return [(c.start_line, c.end_line) for c in chunks]


# --------------------------------------------------------------------------- §1.4 worked examples

def test_sixty_ascii_lines_reference() -> None:
    text = "".join((f"line {n:02d} " + "x" * 51)[:59] + "\n" for n in range(1, 61))
    assert _lines(chunk_markdown(text.rstrip("\n"), mode="reference")) == [
        (1, 26), (21, 46), (41, 60)]
    assert _lines(chunk_markdown(text, mode="reference")) == [(1, 26), (21, 46), (41, 61)]


def test_long_ascii_line_reference_quirk() -> None:
    line = "a" * 4000
    assert [len(c.text) for c in chunk_markdown(line, mode="reference")] == [1600, 3201, 2401]
    chunks = chunk_markdown(line + "\n", mode="reference")
    assert [len(c.text) for c in chunks] == [1600, 3201, 2401, 801]
    assert _lines(chunks) == [(1, 1), (1, 1), (1, 1), (1, 2)]


def test_cjk_line_reference() -> None:
    assert [len(c.text) for c in chunk_markdown("中" * 1000, mode="reference")] == [400, 801, 601]


def test_hash_is_sha256_of_text() -> None:
    for c in chunk_markdown("alpha\nbeta\n\n中文 text", mode="reference"):
        assert c.hash == sha256_hex(c.text)


def test_empty_content_gives_one_empty_chunk() -> None:
    assert [(c.start_line, c.end_line, c.text) for c in chunk_markdown("", mode="reference")] == [
        (1, 1, "")]


# --------------------------------------------------------------------------- real-engine goldens

def _golden_cases() -> list[dict]:
    man = GOLDENS / "chunk" / "MANIFEST.json"
    if not man.exists():
        return []
    return [c for c in json.loads(man.read_text())["cases"] if c["version"] == "2026.5.20"]


@pytest.mark.parametrize("case", _golden_cases(), ids=lambda c: c["input"].split("/")[-1]
                         + f"-t{c['tokens']}-o{c['overlap']}")
def test_reference_mode_matches_openclaw_2026_5_20(case: dict) -> None:
    text = (GOLDENS / case["input"]).read_bytes().decode("utf-8")
    gold = json.loads((GOLDENS / case["golden"]).read_text())["chunks"]
    ours = chunk_markdown(text, case["tokens"], case["overlap"], "reference")
    assert [(g["startLine"], g["endLine"], g["hash"]) for g in gold] == [
        (c.start_line, c.end_line, c.hash) for c in ours]
    for g, c in zip(gold, ours, strict=True):
        if "utf16Len" in g:
            assert utf16_len(c.text) == g["utf16Len"]


def test_goldens_are_present() -> None:
    assert len(_golden_cases()) >= 20


# --------------------------------------------------------------------------- bounded mode

def _random_text(rng: random.Random) -> str:
    pieces = ["word", "中文字符", "🙂", "x" * rng.randint(1, 3000),
              "数据库连接池" * rng.randint(1, 300), "", "- bullet item", "## heading", "\r"]
    return "\n".join("".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
                     for _ in range(rng.randint(1, 60)))


@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize(("tokens", "overlap"), [(400, 80), (50, 10), (100, 0), (32, 31)])
def test_bounded_never_exceeds_budget(seed: int, tokens: int, overlap: int) -> None:
    text = _random_text(random.Random(seed))
    chunks = chunk_markdown(text, tokens, overlap, "bounded")
    budget = max(32, tokens * 4)
    n_lines = len(text.split("\n"))
    for c in chunks:
        weight = sum(estimate_chars(seg) + 1 for seg in c.text.split("\n"))
        assert weight <= budget, (c.start_line, c.end_line, weight)
        assert 1 <= c.start_line <= c.end_line <= n_lines
    # every line is covered by some chunk, in order
    covered = set()
    for c in chunks:
        covered.update(range(c.start_line, c.end_line + 1))
    assert covered == set(range(1, n_lines + 1))
    assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)


def test_bounded_fixes_the_long_line_duplication() -> None:
    chunks = chunk_markdown("a" * 4000, mode="bounded")
    assert all(len(c.text) <= 1600 for c in chunks)
    # nothing is lost or duplicated beyond the overlap: total size stays close to the input
    assert 4000 <= sum(len(c.text) for c in chunks) <= 4000 + 2 * 320


def test_bounded_carries_overlap_between_short_lines() -> None:
    text = "\n".join(f"line {i:03d} " + "y" * 50 for i in range(100))
    chunks = chunk_markdown(text, mode="bounded")
    assert len(chunks) > 2
    for a, b in itertools.pairwise(chunks):
        assert b.start_line <= a.end_line  # overlapping ranges
        assert a.text.split("\n")[-1] in b.text


def test_unknown_mode_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="chunking mode"):
        chunk_markdown("x", mode="fancy")  # type: ignore[arg-type]


def test_remap_chunk_lines_maps_to_jsonl_lines() -> None:
    chunks = [Chunk(1, 2, "a", "h"), Chunk(2, 4, "b", "h"), Chunk(5, 5, "c", "h")]
    mapped = remap_chunk_lines(chunks, [2, 3, 3, 7])
    assert _lines(mapped) == [(2, 3), (3, 7), (5, 5)]  # 5 has no map entry: kept
