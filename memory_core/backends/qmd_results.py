"""Pure helpers of the qmd backend: result lines, the reference's source diversification and
injection budget, ``collection list`` parsing, reading a collection file's lines."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path
from typing import Any

from ..read.fusion import Hit
from ..read.reading import DEFAULT_MAX_CHARS, ReadResult, file_lines, line_window

SNIPPET_HEADER_RE = re.compile(r"@@\s*-([0-9]+),([0-9]+)")


def snippet_lines(entry: dict[str, Any], snippet: str) -> tuple[int, int]:
    """(start, end) of a result: explicit lines, else the ``@@ -start,count @@`` header, else
    qmd's ``line``, else the snippet's own lines from 1."""
    start, end = entry.get("start_line"), entry.get("end_line")
    m = SNIPPET_HEADER_RE.search(snippet)
    header = (int(m.group(1)), int(m.group(1)) + int(m.group(2)) - 1) if m else None
    if start and end:
        return (start, end) if start <= end else (end, start)
    width = (header[1] - header[0]) if header else 0
    if start:
        return start, start + max(0, width)
    if end:
        return max(1, end - max(0, width)), end
    if header:
        return header
    line = entry.get("line")
    if line:
        return line, line
    return 1, max(1, len(snippet.split("\n")))


def diversify_by_source(hits: list[Hit], limit: int) -> list[Hit]:
    """The reference's interleaving of memory and session hits (best source first)."""
    if limit <= 0:
        return []
    by: dict[str, list[Hit]] = {}
    for h in hits:
        by.setdefault(h.source, []).append(h)
    if len(hits) <= 1 or not ("sessions" in by and "memory" in by):
        return hits[:limit]
    # one hit of each source a round, the source of the best hit first
    rounds = zip_longest(*(by[s] for s in sorted(by, key=lambda s: -by[s][0].score)))
    return [h for r in rounds for h in r if h is not None][:limit]


def clamp_injected(hits: list[Hit], budget: int) -> list[Hit]:
    """Keep hits while their snippets fit ``budget`` characters; cut the last one to fit."""
    if budget <= 0:
        return hits
    out: list[Hit] = []
    left = budget
    for h in hits:
        if left <= 0:
            break
        if len(h.snippet) <= left:
            out.append(h)
            left -= len(h.snippet)
        else:
            out.append(replace(h, snippet=h.snippet[:left]))
            break
    return out


def parse_collection_list(output: str) -> dict[str, dict[str, str]]:
    """``qmd collection list`` (2.8 prints text even with ``--json``) as ``{name: {pattern,
    path}}``."""
    text = output.strip()
    listed: dict[str, dict[str, str]] = {}
    if not text:
        return listed
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        for e in parsed:
            if isinstance(e, str):
                listed[e] = {}
            elif isinstance(e, dict) and isinstance(e.get("name"), str):
                d = {k: e[k2] for k, k2 in (("path", "path"), ("pattern", "pattern"),
                                            ("pattern", "mask")) if isinstance(e.get(k2), str)}
                listed[e["name"]] = d
        return listed
    current: str | None = None
    for raw in output.splitlines():
        line = raw.rstrip()
        if not line.strip():
            current = None
            continue
        m = re.match(r"^\s*([a-z0-9._-]+)\s+\(qmd://[^)]+\)\s*$", line, re.I)
        if m:
            current = m.group(1)
            listed.setdefault(current, {})
            continue
        if re.match(r"^\s*collections\b", line, re.I):
            continue
        if current is None:
            continue
        m = re.match(r"^\s*(pattern|mask|path)\s*:\s*(.+?)\s*$", line, re.I)
        if m:  # a mask is the collection's pattern
            listed[current]["path" if m.group(1).lower() == "path" else "pattern"] = \
                m.group(2).strip()
    return listed


def read_file_slice(real: Path, display: str, from_line: int | None, lines: int | None
                    ) -> ReadResult:
    """Lines of a collection file outside the builtin scope (same budget as ``memory_get``)."""
    start, count = line_window(from_line, lines)
    all_lines = file_lines(real, display)
    if all_lines is None:
        return ReadResult(display, "", start, 0)
    window = all_lines[start - 1 : start - 1 + count]
    more = start - 1 + count < len(all_lines)
    text = "\n".join(window)
    if len(text) > DEFAULT_MAX_CHARS:
        text = text[:DEFAULT_MAX_CHARS]
        more = True
    return ReadResult(display, text, start, len(window), more, start + len(window) if more
                      else None)
