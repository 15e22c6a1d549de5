"""Chunks and snippets start on a boundary (issue 21 item 3), default profile only.

A chunk of the bounded chunker starts at the start of a source line, or, inside a line, at a
word (CJK: any character) and then opens with "…". Checked on the chunker directly and on the
snippets real searches return, over the demo and a generated workspace in English and Chinese.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.write.chunking import chunk_markdown

ELLIPSIS = "\u2026"
# Latin letters and digits: two of them side by side are one word, so a start between them is
# a start inside a word. (CJK text has no spaces: any character may start a piece.)
_WORDISH = re.compile(r"[A-Za-z0-9\u00c0-\u024f]")

WORDS = ("build box sounded like a jet engine all sixteen cores were busy the deploy window "
         "moved to Thursday because staging was never needed again reviewers asked for "
         "rollback notes").split()
HANZI = "数据库连接池迁移计划周四上线回滚方案测试环境服务器过热风扇噪音"


def _english_line(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) + (str(rng.randint(0, 99)) if rng.random() < 0.1 else "")
                    for _ in range(words))


def _chinese_line(rng: random.Random, chars: int) -> str:
    out = []
    while len(out) < chars:
        out.append(rng.choice(HANZI))
        if rng.random() < 0.05:
            out.append(f" API{rng.randint(1, 9)} ")
        if rng.random() < 0.08:
            out.append("，")
    return "".join(out)


def _doc(rng: random.Random) -> str:
    lines = ["# Notes"]
    for _ in range(rng.randint(8, 30)):
        kind = rng.random()
        if kind < 0.3:
            lines.append(_english_line(rng, rng.randint(5, 40)))  # short lines
        elif kind < 0.5:
            lines.append(_english_line(rng, rng.randint(60, 700)))  # a paragraph on one line
        elif kind < 0.65:
            lines.append(_chinese_line(rng, rng.randint(20, 900)))
        else:
            lines.append("")
    return "\n".join(lines)


def _starts_inside_a_word(line: str, rest: str) -> bool:
    """``rest`` (a chunk's first line without its mark) is found in ``line`` only right after
    a character that, with its own first one, belongs to the same word."""
    spots = [m.start() for m in re.finditer(re.escape(rest), line)]
    assert spots, (rest[:40], line[:80])
    return all(p > 0 and _WORDISH.match(line[p - 1]) and _WORDISH.match(rest[0]) for p in spots)


def _check_start(lines: list[str], start_line: int, text: str) -> None:
    first = text.split("\n", 1)[0]
    line = lines[start_line - 1]
    if first.startswith(ELLIPSIS):
        rest = first[1:]
        assert rest and not rest[0].isspace(), repr(first[:40])
        assert not _starts_inside_a_word(line, rest), (start_line, first[:60])
    else:
        assert line.startswith(first), (start_line, first[:60], line[:60])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize(("tokens", "overlap"), [(400, 80), (60, 20), (100, 0)])
def test_bounded_chunks_start_at_a_line_or_a_word(seed: int, tokens: int, overlap: int) -> None:
    text = _doc(random.Random(seed))
    lines = text.split("\n")
    chunks = [c for c in chunk_markdown(text, tokens, overlap, "bounded") if c.text.strip()]
    assert len(chunks) > 1
    marked = 0
    for c in chunks:
        _check_start(lines, c.start_line, c.text)
        marked += c.text.startswith(ELLIPSIS)
    assert marked > 0  # the generated long lines do make chunks start inside a line


def test_overlap_keeps_the_phrase_whole() -> None:
    # The example: a character tail cut "jet engine" to "t engine".
    line = "Friday: our build box sounded like a jet engine, all 16 cores pegged for an hour."
    text = "\n".join([line] * 40)
    for c in chunk_markdown(text, mode="bounded")[1:]:
        first = c.text.split("\n", 1)[0]
        assert first == line or (first.startswith(ELLIPSIS) and line.endswith(first[1:])
                                 and line[len(line) - len(first)] == " ")


def test_long_chinese_line_pieces_are_marked() -> None:
    text = HANZI * 120
    chunks = chunk_markdown(text, mode="bounded")
    assert len(chunks) > 2
    assert not chunks[0].text.startswith(ELLIPSIS)
    assert all(c.text.startswith(ELLIPSIS) for c in chunks[1:])
    assert all(c.text[1:].split("\n")[0] in text for c in chunks[1:])


def test_reference_chunking_has_no_marks() -> None:
    text = _doc(random.Random(3))
    assert not any(ELLIPSIS in c.text for c in chunk_markdown(text, mode="reference"))


QUERIES = ("jet engine", "deploy window Thursday", "rollback notes", "数据库连接池",
           "服务器过热", "回滚方案 API3", "which colleague is leaving the company?",
           "why did our hosting spend increase?", "TLS handshake error", "staging",
           "cores busy", "迁移计划")


def _assert_snippets(ws: Path, idx: MemoryIndex) -> int:
    seen = 0
    for q in QUERIES:
        for h in idx.search(q, max_results=20).hits:
            if not h.path.endswith(".md"):
                continue  # transcripts: rendered lines, not the file's
            lines = (ws / h.path).read_text(encoding="utf-8").split("\n")
            _check_start(lines, h.start_line, h.snippet)
            seen += 1
    # and every Markdown chunk of the index, hit or not
    for c in idx.chunks():
        if c.path.endswith(".md"):
            _check_start((ws / c.path).read_text(encoding="utf-8").split("\n"), c.start_line,
                         c.text)
    return seen


def test_demo_snippets_start_on_a_boundary(indexed_demo: Path) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        assert _assert_snippets(indexed_demo, idx) > 50


def test_generated_workspace_snippets_start_on_a_boundary(tmp_path: Path) -> None:
    rng = random.Random(21)
    mem = tmp_path / "memory"
    mem.mkdir()
    for day in range(1, 7):
        (mem / f"2026-03-0{day}.md").write_text(_doc(rng), encoding="utf-8")
    (tmp_path / "MEMORY.md").write_text("# Long-term\n" + _chinese_line(rng, 1500) + "\n"
                                        + _english_line(rng, 900) + "\n", encoding="utf-8")
    # keyword-only: a snippet is cut from its chunk's text whichever leg found it (the demo test
    # above covers vector hits), so the local model's minute of embedding here proved nothing more
    with MemoryIndex.open(tmp_path, provider="none") as idx:
        idx.sync()
        marked = sum(c.text.startswith(ELLIPSIS) for c in idx.chunks())
        assert marked > 5
        assert _assert_snippets(tmp_path, idx) > 50
