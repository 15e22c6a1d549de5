"""Views for the Chunks page: chunk tables with overlaps, and the source with lines highlighted."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from memory_core import MemoryIndex
from memory_core.base.lru import Lru
from memory_core.base.text import estimate_tokens
from memory_core.storage.store import ChunkRow


@dataclass
class SourceLines:
    """A file as the index reads it: its lines and each line's number in the file.

    For Markdown, line *i* is number *i*. For transcripts the lines are the rendered
    ``User:`` / ``Assistant:`` lines and the numbers are their JSONL lines, which is what chunk
    line ranges refer to.
    """

    lines: list[str]
    numbers: list[int]


#: Text filters remembered per server process (paging or picking a file must not rescan).
_matches = Lru(16)


def text_matches(idx: MemoryIndex, needle: str,
                 progress: Callable[[int, int], None] | None = None
                 ) -> dict[str, tuple[str, int, int]]:
    """``path → (source, chunks, matching chunks)`` of the files whose chunks contain
    ``needle`` (:meth:`MemoryIndex.text_matches`: a scan of every chunk, seconds at a million),
    once per needle and index generation: the filter's pages and files reuse it."""
    return _matches.get_or((str(idx.store_path), idx.generation, needle.casefold()),
                           lambda: idx.text_matches(needle, progress))


def source_lines(idx: MemoryIndex, path: str) -> SourceLines:
    """The lines of ``path`` with their file line numbers (see :class:`SourceLines`).

    Raises ``FileNotFoundError`` when ``path`` is not one of the workspace's memory files and
    ``ValueError`` when it cannot be read (see :meth:`MemoryIndex.file_view`).
    """
    view = idx.file_view(path)
    lines = view.text.split("\n")
    if view.line_map is not None:
        return SourceLines(lines, list(view.line_map[: len(lines)]))
    return SourceLines(lines, list(range(1, len(lines) + 1)))


def overlap_lines(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """How many lines two inclusive line ranges share."""
    return max(0, min(a_end, b_end) - max(a_start, b_start) + 1)


def chunk_frame(chunks: Sequence[ChunkRow], needle: str = "") -> pd.DataFrame:
    """One row per chunk, in line order: range, size, token estimate, overlap with neighbours."""
    ordered = sorted(chunks, key=lambda c: (c.start_line, c.end_line))
    rows = []
    for i, c in enumerate(ordered):
        prev = ordered[i - 1] if i > 0 else None
        nxt = ordered[i + 1] if i + 1 < len(ordered) else None
        rows.append({
            "#": i + 1,
            "lines": f"L{c.start_line}–L{c.end_line}",
            "start": c.start_line,
            "end": c.end_line,
            "chars": len(c.text),
            "tokens (est.)": estimate_tokens(c.text),
            "overlap prev": overlap_lines(prev.start_line, prev.end_line, c.start_line,
                                          c.end_line) if prev else 0,
            "overlap next": overlap_lines(c.start_line, c.end_line, nxt.start_line,
                                          nxt.end_line) if nxt else 0,
            "match": bool(needle) and needle.casefold() in c.text.casefold(),
            "preview": " ".join(c.text.split())[:100],
            "id": c.id,
        })
    return pd.DataFrame(rows, columns=["#", "lines", "start", "end", "chars", "tokens (est.)",
                                       "overlap prev", "overlap next", "match", "preview", "id"])


def highlight_html(src: SourceLines, start: int, end: int, *, context: int | None = None,
                   needle: str = "") -> str:
    """The source as HTML: line numbers in a gutter, lines ``start..end`` highlighted.

    ``context`` limits the view to that many lines around the chunk (``None``: whole file);
    ``needle`` is marked wherever it occurs.
    """
    picked = [i for i, n in enumerate(src.numbers) if start <= n <= end]
    lo, hi = 0, len(src.lines)
    if context is not None and picked:
        lo, hi = max(0, picked[0] - context), min(len(src.lines), picked[-1] + context + 1)
    out = []
    for i in range(lo, hi):
        n = src.numbers[i] if i < len(src.numbers) else ""
        text = html.escape(src.lines[i]) or "&nbsp;"
        if needle:
            text = mark(text, [html.escape(needle)])
        cls = "wb-hl" if start <= (n if isinstance(n, int) else -1) <= end else ""
        out.append(f'<div class="wb-line {cls}"><span class="wb-no">{n}</span>'
                   f'<span class="wb-tx">{text}</span></div>')
    style = (
        "<style>.wb-src{font-family:'Noto Sans Mono CJK SC','DejaVu Sans Mono',monospace;"
        "font-size:12.5px;line-height:1.45;border:1px solid #e6e6e6;border-radius:6px;"
        "max-height:560px;overflow:auto;padding:4px 0;background:#fcfcfc}"
        ".wb-line{display:flex;white-space:pre-wrap;word-break:break-word}"
        ".wb-no{flex:0 0 3.2em;text-align:right;padding-right:.8em;color:#9aa0a6;"
        "user-select:none}.wb-tx{flex:1}"
        ".wb-hl{background:#fff3bf}.wb-hl .wb-no{color:#b08900;font-weight:600}"
        "mark{background:#ffd8a8;padding:0}</style>")
    return style + '<div class="wb-src">' + "".join(out) + "</div>"


def _word(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "_")


def _whole(text: str, i: int, n: int) -> bool:
    """Whether ``text[i:i+n]`` is not part of a longer (ASCII) word: "ill" in "Will" is not.
    CJK runs have no spaces between words, so only ASCII letters and digits bound a match."""
    head, tail = text[i], text[i + n - 1]
    return not ((_word(head) and i > 0 and _word(text[i - 1]))
                or (_word(tail) and i + n < len(text) and _word(text[i + n])))


def mark(text: str, needles: Sequence[str], *, words: bool = False) -> str:
    """``text`` (HTML) with every case-insensitive occurrence of any of ``needles`` (HTML too)
    wrapped in ``<mark>``; the longest needle wins where two start at one place. With
    ``words``, only whole words are marked, as the keyword leg matches them (a snippet);
    without, any occurrence (the Chunks page's text filter, a substring search)."""
    low = text.casefold()
    # compared slice by slice: casefolding may change a string's length (ß → ss)
    by_fold = {n.casefold(): len(n) for n in needles if n}
    wanted = sorted(((f, n) for f, n in by_fold.items() if f in low), key=lambda fn: -fn[1])
    if not wanted:
        return text
    out, i, start = [], 0, 0
    while i < len(text):
        hit = next((n for f, n in wanted if text[i:i + n].casefold() == f
                    and (not words or _whole(text, i, n))), None)
        if hit is None:
            end = text.find(";", i) if text[i] == "&" else -1
            i = end + 1 if 0 < end - i <= 8 else i + 1  # never inside an entity (&amp;)
            continue
        out.append(text[start:i] + "<mark>" + text[i:i + hit] + "</mark>")
        i = start = i + hit
    out.append(text[start:])
    return "".join(out)


def snippet_html(text: str, terms: Sequence[str]) -> str:
    """A hit's snippet as HTML: its text kept as written (a diary's ``# 2026-11-20`` is no
    heading), the query's ``terms`` marked."""
    body = mark(html.escape(text), [html.escape(t) for t in terms], words=True)
    return ('<div style="white-space:pre-wrap;word-break:break-word;font-size:0.92em;'
            'line-height:1.45;border-left:3px solid #e6e6e6;padding:2px 0 2px 10px">'
            f'{body}</div>')


def plain_block(text: str, lang: str = "text") -> str:
    """``text`` as a Markdown fenced block shown as written: the fence is one tilde longer than
    the longest tilde run in ``text`` (at least four), so a snippet holding ``~~~~`` cannot
    close it early and spill the rest as Markdown."""
    longest = max((len(m) for m in re.findall(r"~+", text)), default=0)
    fence = "~" * max(4, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def display_value(value: object) -> str:
    """A setting's value as a person writes it, not as a Python repr: ``—`` for none, lists
    joined with commas, ``on``/``off`` for flags (Home's settings table showed
    ``['memory', 'sessions']``, ``None`` and ``True``)."""
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple, set)):
        return ", ".join(display_value(v) for v in value) or "—"
    return str(value)


_HUNK_HEADER = re.compile(r"\A\s*@@[^@\n]*@@[^\n]*\n?")


def without_hunk_header(snippet: str) -> str:
    """A qmd snippet without its leading ``@@ -3,3 @@ …`` line: the engine reads the lines from
    it (the citation shows them); a person reads the text."""
    return _HUNK_HEADER.sub("", snippet, count=1)
