"""Chunking: Markdown text → chunks that remember their 1-based, inclusive line ranges.

Two modes:

``reference``
    OpenClaw 2026.5.20's ``chunkMarkdown``, quirks included (spec §1): lengths in UTF-16 units,
    CJK weighted 4×, overlap carried as whole segments, so a long line can yield chunks of about
    twice the budget.
``bounded`` (the default)
    The same line-oriented walk, but no chunk ever exceeds its budget: segments are cut by weight,
    code-point safe, and the overlap carried into the next chunk is capped by the room the next
    segment leaves, taking only the tail of a segment that does not fit (as OpenClaw 2026.9 does).
    Unlike a character tail, that tail, and every piece of a long line, starts at a word (after
    white space; CJK text at any character), and a chunk that starts inside a line opens with
    "…" (:data:`CONTINUED`), so neither its text nor its snippet begins with half a word.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ..base.lazy import lazy_pattern
from ..base.text import (
    REFERENCE_NON_LATIN_RE,
    estimate_chars,
    estimate_units_chars,
    from_units,
    is_word_start,
    to_units,
)

ChunkMode = Literal["reference", "bounded"]


@dataclass(frozen=True)
class Chunk:
    """One piece of a file: its line range (1-based, inclusive), text and SHA-256 of the text."""

    start_line: int
    end_line: int
    text: str
    hash: str

    def to_dict(self) -> dict[str, object]:
        return {"startLine": self.start_line, "endLine": self.end_line, "hash": self.hash,
                "text": self.text}


def sha256_hex(text: str) -> str:
    """SHA-256 hex of the UTF-8 bytes of ``text``."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


#: A block shorter than this many characters (a bare "user:" line, a rule) is not embedded.
MIN_BLOCK_CHARS = 20
_BLANK_LINES = lazy_pattern(r"\n\s*\n")


def chunk_blocks(text: str) -> list[str]:
    """The blocks of a chunk that get vectors of their own (issue #36): its blank-line
    separated paragraphs, each stripped, without headings (``# …``, which every chunk of a
    diary repeats) and without those under :data:`MIN_BLOCK_CHARS`, each once.

    A chunk's one vector is the mean of its windows, so one user turn among a dozen is diluted
    by the rest; the vector leg scores a chunk by its best block (``SearchSettings.
    block_rescore``) while the agent still reads the whole chunk.
    """
    parts = (b.strip() for b in _BLANK_LINES.split(text))
    return list(dict.fromkeys(b for b in parts if len(b) >= MIN_BLOCK_CHARS
                              and not b.startswith("# ")))


def _budgets(tokens: int, overlap: int) -> tuple[int, int, int]:
    tokens = max(1, int(tokens))
    overlap = min(max(0, int(overlap)), tokens - 1)
    return tokens, max(32, tokens * 4), max(0, overlap * 4)


def chunk_markdown(
    text: str, tokens: int = 400, overlap: int = 80, mode: ChunkMode = "bounded"
) -> list[Chunk]:
    """Split ``text`` into chunks of about ``tokens`` tokens with ``overlap`` tokens carried over.

    Lines are split on ``\\n`` only (a ``\\r`` stays in its line, as in the reference). Empty
    content gives one chunk with empty text; callers that index drop chunks whose text is blank.
    """
    if mode == "reference":
        return _chunk_reference(text, tokens, overlap)
    if mode == "bounded":
        return _chunk_bounded(text, tokens, overlap)
    raise ValueError(f"unknown chunking mode {mode!r} (expected 'reference' or 'bounded')")


# --------------------------------------------------------------------------- reference


def _chunk_reference(content: str, tokens: int, overlap: int) -> list[Chunk]:
    tokens, max_chars, overlap_chars = _budgets(tokens, overlap)
    chunks: list[Chunk] = []
    current: list[tuple[str, int]] = []  # (segment in UTF-16 units, line number)
    current_chars = 0

    def flush() -> None:
        if not current:
            return
        units = "\n".join(seg for seg, _ in current)
        text = from_units(units)
        chunks.append(Chunk(current[0][1], current[-1][1], text, sha256_hex(text)))

    def carry() -> None:
        nonlocal current, current_chars
        if overlap_chars <= 0 or not current:
            current, current_chars = [], 0
            return
        kept: list[tuple[str, int]] = []
        acc = 0
        for entry in reversed(current):
            acc += estimate_units_chars(entry[0]) + 1
            kept.insert(0, entry)
            if acc >= overlap_chars:
                break
        current, current_chars = kept, acc

    for i, raw_line in enumerate(content.split("\n")):
        line_no = i + 1
        line = to_units(raw_line)
        segments: list[str] = []
        if line == "":
            segments = [""]
        else:
            for start in range(0, len(line), max_chars):
                coarse = line[start : start + max_chars]
                if estimate_units_chars(coarse) > max_chars:
                    step = max(1, tokens)
                    j = 0
                    while j < len(coarse):
                        end = min(j + step, len(coarse))
                        if end < len(coarse) and 0xD800 <= ord(coarse[end - 1]) < 0xDC00:
                            end += 1
                        segments.append(coarse[j:end])
                        j = end
                else:
                    segments.append(coarse)
        for seg in segments:
            size = estimate_units_chars(seg) + 1
            if current_chars + size > max_chars and current:
                flush()
                carry()
            current.append((seg, line_no))
            current_chars += size
    flush()
    return chunks


# --------------------------------------------------------------------------- bounded


def _char_weight(ch: str) -> int:
    if REFERENCE_NON_LATIN_RE.match(ch):
        return 4
    return 2 if ord(ch) > 0xFFFF else 1


#: Marks a chunk whose first line starts inside a source line (a carried tail, or a piece of
#: a long line): the reader sees that text came before, and the snippet says so.
CONTINUED = "\u2026"
def _split_by_weight(line: str, limit: int) -> list[str]:
    """Cut ``line`` into code-point-safe pieces whose weight is at most ``limit``, each
    starting at a word where the piece holds one (a run with no boundary is cut hard)."""
    if estimate_chars(line) <= limit:
        return [line]
    if line.isascii():
        return _split_ascii(line, limit)
    pieces: list[str] = []
    start = 0
    acc = 0
    idx = 0
    while idx < len(line):
        w = _char_weight(line[idx])
        if acc + w > limit and idx > start:
            cut = next((j for j in range(idx, start, -1) if is_word_start(line, j)), idx)
            pieces.append(line[start:cut])
            start, acc, idx = cut, 0, cut
            continue
        acc += w
        idx += 1
    pieces.append(line[start:])
    return pieces


#: In ASCII text (no CJK), a word starts only after white space: the greedy match from a piece's
#: start ends at the last such start (``\s`` is ``str.isspace``, as in ``is_word_start``).
_LAST_WORD_START = lazy_pattern(r"(?s).*\s(?=\S)")


def _split_ascii(line: str, limit: int) -> list[str]:
    """:func:`_split_by_weight` of an ASCII line, the same pieces: every character weighs 1, so
    a piece ends ``limit`` characters on (at least one), cut back to its last word start. The
    scans run in the regular expression engine: character by character in Python, a 5 MB line
    with no space took ~9 CPU s to chunk."""
    pieces: list[str] = []
    start = 0
    step = max(limit, 1)
    while start + step < len(line):
        end = start + step  # the first character that no longer fits
        m = _LAST_WORD_START.match(line, start, end + 1)
        cut = m.end() if m else end
        pieces.append(line[start:cut])
        start = cut
    pieces.append(line[start:])
    return pieces


def _tail_by_weight(seg: str, budget: int) -> str:
    """The longest suffix of ``seg`` whose weight is at most ``budget`` and that starts at a
    word (``""`` when no word starts inside it)."""
    acc = 0
    idx = len(seg)
    while idx > 0:
        w = _char_weight(seg[idx - 1])
        if acc + w > budget:
            break
        acc += w
        idx -= 1
    while idx < len(seg) and not is_word_start(seg, idx):
        idx += 1
    return seg[idx:]


def _chunk_bounded(content: str, tokens: int, overlap: int) -> list[Chunk]:
    _, max_chars, overlap_chars = _budgets(tokens, overlap)
    chunks: list[Chunk] = []
    # (segment, line number, whether it starts inside its line); a chunk whose first segment
    # does is marked with CONTINUED, one character counted in its weight.
    current: list[tuple[str, int, bool]] = []
    current_chars = 0

    def flush() -> None:
        if current:
            text = (CONTINUED if current[0][2] else "") + "\n".join(s for s, _, _ in current)
            chunks.append(Chunk(current[0][1], current[-1][1], text, sha256_hex(text)))

    def carry(incoming: int) -> None:
        nonlocal current, current_chars
        # -1: room for the CONTINUED mark, should the overlap start inside a line.
        window = min(overlap_chars, max_chars - incoming) - 1
        kept: list[tuple[str, int, bool]] = []
        acc = 0
        for seg, line_no, inside in reversed(current):
            size = estimate_chars(seg) + 1
            if acc + size <= window:
                kept.insert(0, (seg, line_no, inside))
                acc += size
                if acc >= window:
                    break
                continue
            # The segment that does not fit is carried in part, from a word on. (Leaving it
            # whole to the chunk before, so that the overlap starts at a line, measured worse:
            # LoCoMo vector leg S@5 0.682 against 0.696, docs/retrieval.md.)
            room = window - acc - 1
            if room > 0:
                tail = _tail_by_weight(seg, room)
                if tail:
                    kept.insert(0, (tail, line_no, True))
                    acc += estimate_chars(tail) + 1
            break
        current, current_chars = kept, acc + (1 if kept and kept[0][2] else 0)

    for i, line in enumerate(content.split("\n")):
        line_no = i + 1
        # -2: every segment also pays one character for the newline that joins it, and a piece
        # after the first may open a chunk and pay one for the CONTINUED mark.
        offset = 0
        for seg in _split_by_weight(line, max_chars - 2) if line else [""]:
            size = estimate_chars(seg) + 1
            if current_chars + size > max_chars and current:
                flush()
                carry(size)
            if not current and offset:
                current_chars += 1
            current.append((seg, line_no, offset > 0))
            current_chars += size
            offset += len(seg)
    flush()
    return chunks


# --------------------------------------------------------------------------- transcripts


def remap_chunk_lines(chunks: Sequence[Chunk], line_map: Sequence[int] | None) -> list[Chunk]:
    """Map rendered-line numbers back to source (JSONL) line numbers, as the reference does.

    A chunk keeps its old number where the map has no entry for it.
    """
    if not line_map:
        return list(chunks)
    out = []
    for c in chunks:
        start = line_map[c.start_line - 1] if 0 < c.start_line <= len(line_map) else c.start_line
        end = line_map[c.end_line - 1] if 0 < c.end_line <= len(line_map) else c.end_line
        out.append(Chunk(start, end, c.text, c.hash))
    return out
