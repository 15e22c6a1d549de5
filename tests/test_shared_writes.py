"""Writes to the user's Markdown beside a concurrent writer (issue #33, item 1).

The agent whose memory this is appends to ``MEMORY.md`` and to today's diary while promotion
and dreaming rewrite them. A real writer process appends numbered lines in a loop (open with
``O_APPEND``, write, close, as an agent does) during 20 applies, undos and dreams; afterwards
every one of its lines is in the file exactly once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core import promotion as pr
from memory_core.base.fileio import ContentChanged, rebased, rewrite_shared
from memory_core.promotion.memory_file import edit_markdown, promotion_markers

try:
    from tests.test_promotion import NOW, make_ws, open_index, seed
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from test_promotion import NOW, make_ws, open_index, seed  # type: ignore[no-redef]

APPENDER = """
import sys, time
from pathlib import Path
path, stop, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
nl = sys.argv[4].encode().decode("unicode_escape")
i = 0
while not stop.exists():
    with open(path, "a", encoding="utf-8", newline="") as f:
        f.write(f"- {tag} line {i}{nl}")
    i += 1
    time.sleep(0.002)
print(i, flush=True)
"""


class Appender:
    """A separate process appending ``- <tag> line N`` lines to ``path`` until stopped."""

    def __init__(self, path: Path, tag: str, nl: str = "\\n") -> None:
        self.path, self.tag = path, tag
        self.stop_file = path.parent / f".stop-{tag}"
        self.proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(path),
                                      str(self.stop_file), tag, nl],
                                     stdout=subprocess.PIPE, text=True)
        while not path.exists() or f"- {tag} line 0" not in path.read_text("utf-8"):
            time.sleep(0.01)  # it is writing before the first rewrite starts

    def stop(self) -> int:
        self.stop_file.touch()
        out, _ = self.proc.communicate(timeout=60)
        self.stop_file.unlink()
        return int(out.strip())

    def lost(self, written: int) -> list[int]:
        text = self.path.read_text("utf-8")
        return [i for i in range(written) if text.count(f"- {self.tag} line {i}\n") != 1]


def test_rewrite_loses_no_appended_line(tmp_path: Path) -> None:
    p = tmp_path / "MEMORY.md"
    p.write_text("# Top 0\n")
    agent = Appender(p, "agent")
    n, deadline = 0, time.monotonic() + 120
    try:
        # each a full rewrite (the first line changes), not an append: at least 20, and on
        # until the agent has appended 100 lines beside them (a busy machine runs it slowly)
        while n < 20 or (p.read_text("utf-8").count("- agent line") < 100
                         and time.monotonic() < deadline):
            n += 1
            rewrite_shared(p, lambda cur, n=n: cur.replace(
                f"# Top {n - 1}\n".encode(), f"# Top {n}\n".encode(), 1))
    finally:
        written = agent.stop()
    assert written >= 100
    assert agent.lost(written) == []
    assert p.read_text().startswith(f"# Top {n}\n")


def test_rebased_edit_keeps_appends_and_refuses_other_changes() -> None:
    edit = rebased(b"a\n", b"a\nb\n")
    assert edit(b"a\n") == b"a\nb\n"
    assert edit(b"a\nmine\n") == b"a\nb\nmine\n"
    with pytest.raises(ContentChanged):
        edit(b"changed\n")


def test_apply_undo_and_dream_lose_no_line_of_a_concurrent_writer(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    diary = ws / "memory" / "2026-11-30.md"
    diary.write_text("# 2026-11-30\r\n\r\n- started the day\r\n", newline="")
    cfg = pr.DreamingConfig(storage="inline")
    with open_index(ws) as idx:
        seed(idx)
        memory_agent = Appender(ws / "MEMORY.md", "memory-agent")
        diary_agent = Appender(diary, "diary-agent", "\\r\\n")
        applied = undone = 0
        try:
            for _ in range(20):
                applied += pr.apply(idx, now=NOW, resync=False).wrote
                undone += pr.undo(idx, now=NOW, resync=False).restored
                pr.dream(idx, cfg, phase="light", now=NOW)
        finally:
            to_memory, to_diary = memory_agent.stop(), diary_agent.stop()
    assert applied == undone == 20
    assert memory_agent.lost(to_memory) == []
    text = diary.read_bytes().decode()
    lost = [i for i in range(to_diary) if text.count(f"- diary-agent line {i}\r\n") != 1]
    assert lost == []
    assert "\n" not in text.replace("\r\n", "")  # the CRLF diary stays CRLF
    assert text.count("<!-- openclaw:dreaming:light:start -->") == 1
    assert promotion_markers((ws / "MEMORY.md").read_text()) == []  # every apply undone


def test_a_symlinked_dreams_md_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "dreams.md"
    target.parent.mkdir()
    target.write_bytes("\ufeff# Dream Diary\r\n".encode())
    link = tmp_path / "DREAMS.md"
    link.symlink_to(target)
    edit_markdown(link, lambda t: t + "- a night\n")
    assert link.is_symlink()
    assert target.read_bytes() == "\ufeff# Dream Diary\r\n- a night\r\n".encode()


def test_a_marker_inside_a_code_fence_is_not_a_promotion() -> None:
    text = ("# Notes\n\n```\n<!-- openclaw-memory-promotion:memory:a.md:1:1 -->\n```\n"
            "<!-- openclaw-memory-promotion:memory:b.md:2:2 -->\n")
    assert promotion_markers(text) == ["memory:b.md:2:2"]


def test_undo_of_a_created_memory_md_keeps_what_the_agent_wrote(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, memory=None)
    with open_index(ws) as idx:
        seed(idx)
        assert pr.apply(idx, now=NOW, resync=False).wrote
        with open(ws / "MEMORY.md", "a") as f:
            f.write("- the agent's own line\n")
        assert pr.undo(idx, now=NOW, resync=False).restored
    assert (ws / "MEMORY.md").read_text() == "- the agent's own line\n"
    assert os.path.exists(ws / "MEMORY.md")


def test_an_undo_is_told_to_the_dream_diary_that_told_of_the_promotion(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        res = pr.apply(idx, now=NOW, resync=False)
        pr.write_diary(idx, promoted=pr.promoted_snippets(idx, res.applied), now=NOW)
        assert "Promoted into MEMORY.md: 1 entry" in (ws / "DREAMS.md").read_text()
        assert pr.undo(idx, now=NOW, resync=False).restored
    text = (ws / "DREAMS.md").read_text()
    assert "Undid the promotion of 2026-11-30T12:00:00Z: 1 entry taken back out" in text


def test_a_read_only_index_writes_no_promotion_state(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
    state_file = pr.state_path(ws)
    before = state_file.read_bytes()
    with open_index(ws) as idx:
        idx.readonly = True  # as the workbench opens it under $MEMORY_WORKBENCH_READONLY
        assert pr.list_candidates(idx, now=NOW)  # reads the signals as they are
        with pytest.warns(RuntimeWarning, match="not recorded: attempt to write a readonly"):
            seed(idx)
    assert state_file.read_bytes() == before
    fresh = make_ws(tmp_path / "fresh")
    with open_index(fresh) as idx:
        idx.readonly = True
        assert pr.list_candidates(idx, now=NOW) == []
    assert not pr.state_path(fresh).exists()
