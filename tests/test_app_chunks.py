"""AppTest of the Chunks page: files by source, chunk line ranges, highlight, filter, memory_get."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from memory_core import MemoryIndex
from tests.apptesting import OpenApp


@pytest.fixture
def demo(module_demo: Path) -> Path:
    return module_demo


@pytest.fixture
def at(open_app: OpenApp, demo: Path) -> AppTest:
    return open_app(demo, "pages/chunks.py", timeout=120)


def _frame(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _engine_ranges(demo: Path, path: str) -> list[str]:
    with MemoryIndex.open(demo, provider="none") as idx:
        rows = sorted(idx.chunks(path), key=lambda c: c.start_line)
        return [f"L{c.start_line}–L{c.end_line}" for c in rows]


def _highlighted(at: AppTest) -> list[int]:
    html = "".join(h.proto.body for h in at.get("html"))
    return [int(n) for n in re.findall(r'wb-line wb-hl"><span class="wb-no">(\d+)<', html)]


def test_selecting_a_file_shows_its_chunks_with_their_line_ranges(at: AppTest,
                                                                  demo: Path) -> None:
    files = _frame(at, "path")
    assert set(files["source"]) == {"memory", "sessions"} and len(files) == 20
    at.selectbox(key="chunks_file").set_value("memory/2026-10-27.md").run()
    assert not at.exception
    chunks = _frame(at, "overlap prev")
    assert list(chunks["lines"]) == _engine_ranges(demo, "memory/2026-10-27.md")
    assert (chunks["tokens (est.)"] > 0).all()
    # neighbours overlap by the lines they share
    starts = [int(x.split("–")[0][1:]) for x in chunks["lines"]]
    ends = [int(x.split("–")[1][1:]) for x in chunks["lines"]]
    for i in range(1, len(starts)):
        assert chunks["overlap prev"].iloc[i] == max(0, ends[i - 1] - starts[i] + 1)
    # the selected chunk's lines are highlighted in the source view
    assert _highlighted(at) == list(range(starts[0], ends[0] + 1))
    last = at.selectbox(key="chunks_chunk").options[-1]
    at.selectbox(key="chunks_chunk").set_value(last).run()
    assert _highlighted(at) == list(range(starts[-1], ends[-1] + 1))
    # memory_get returns exactly those lines
    got = next(j.value for j in at.json if "from" in str(j.value))
    got = got if isinstance(got, dict) else json.loads(got)
    assert got["path"] == "memory/2026-10-27.md" and got["from"] == starts[-1]
    text = (demo / "memory" / "2026-10-27.md").read_text(encoding="utf-8").split("\n")
    assert got["text"] == "\n".join(text[starts[-1] - 1:ends[-1]])


def test_source_filter_and_transcript_line_numbers(at: AppTest) -> None:
    at.radio(key="chunks_source").set_value("sessions").run()
    files = _frame(at, "path")
    assert len(files) == 3 and all(p.startswith("sessions/") for p in files["path"])
    path = at.selectbox(key="chunks_file").value
    assert path.startswith("sessions/")
    chunks = _frame(at, "lines")
    first = chunks["lines"].iloc[0]
    start, end = (int(x[1:]) for x in first.split("–"))
    hl = _highlighted(at)
    assert hl and min(hl) >= start and max(hl) <= end  # JSONL line numbers in the gutter
    # memory_get reads a transcript citation too (issue #21): its rendered lines, no refusal
    assert not any("refuses" in w.value for w in at.warning)
    got = next(j.value for j in at.json if "from" in str(j.value))
    got = got if isinstance(got, dict) else json.loads(got)
    assert got["path"] == path and got["text"].strip()


def test_text_filter_narrows_files_and_marks_chunks(at: AppTest) -> None:
    at.text_input(key="chunks_filter").input("连接池").run()
    assert not at.exception
    files = _frame(at, "path")
    assert "memory/2026-10-27.md" in set(files["path"])
    assert (files["matches"] > 0).all()
    assert any("连接池" in c.value and "contain" in c.value for c in at.caption)
    at.selectbox(key="chunks_file").set_value("memory/2026-10-27.md").run()
    chunks = _frame(at, "match")
    assert chunks["match"].any()
    assert "match" in at.selectbox(key="chunks_chunk").value  # the first matching chunk
    html = "".join(h.proto.body for h in at.get("html"))
    assert "<mark>连接池</mark>" in html


def test_superseded_lines_are_marked_with_the_newer_line(at: AppTest) -> None:
    """Issue #34: the demo's 2026-10-20 diary states three values later diaries changed."""
    at.selectbox(key="chunks_file").set_value("memory/2026-10-20.md").run()
    assert not at.exception
    marked = next(c.value for c in at.caption if c.value.startswith("Superseded: "))
    assert "L10 by `memory/2026-10-23.md#L11`" in marked
    assert "L11 by `memory/2026-11-14.md#L7`" in marked
    at.selectbox(key="chunks_file").set_value("memory/2026-11-20.md").run()
    assert not any(c.value.startswith("Superseded: ") for c in at.caption)
