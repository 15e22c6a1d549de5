"""Promotion keeps the user's text and its own word (issue 19 item 8).

Budget compaction drops only sections promotion itself wrote (its history says which), never a
section the user wrote that merely looks like one (the heading, a marker, a promoted bullet).
And on a full disk ``promote --apply`` says so in one line (exit 2) with ``MEMORY.md``, the
history and the backups as they were: a real 2 MiB tmpfs, filled up (skipped where mounting is
not allowed). Real engine, real files, keyword-only (provider ``none``).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory_core import promotion as pr

try:
    from tests.test_promotion import DIARY, NOW, make_ws, open_index, seed, state
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from test_promotion import DIARY, NOW, make_ws, open_index, seed, state  # type: ignore

DIARY2 = """# 2026-11-25

## Glacier backups
- Moved the nightly backup of the wiki database to Glacier Deep Archive; restores take 12 hours.
- The restore drill on Thursday brought back the wiki snapshot in 11h40m, checksums matched.
- Glacier retention is 180 days; older archives are deleted by the lifecycle rule.
"""
QUERIES2 = ["glacier backup restore", "wiki snapshot restore drill", "glacier retention days",
            "nightly backup wiki database"]
LATER = NOW + timedelta(days=6)

#: A section the user wrote, shaped like a promoted one: promotion never wrote it.
LOOKALIKE = ("\n## Promoted From Short-Term Memory (2025-06-01)\n\n"
             "<!-- openclaw-memory-promotion:memory:memory/2025-06-01.md:1:3 -->\n"
             "- My own summary of the hosting move: Hetzner, two boxes, the VLAN plan, written "
             "by hand and kept here on purpose " + "(mine) " * 40
             + "[score=0.900 recalls=3 avg=0.900 source=memory/2025-06-01.md:1-3]\n")


def test_compaction_drops_what_promotion_wrote_never_a_lookalike(tmp_path: Path) -> None:
    user = "# Mine\n\n- Sam prefers short answers first.\n" + LOOKALIKE
    ws = make_ws(tmp_path, memory=user, diaries={"2026-11-20.md": DIARY,
                                                "2026-11-25.md": DIARY2})
    with open_index(ws) as idx:
        seed(idx)
        first = pr.preview_apply(idx, now=NOW)
        assert len(first.entries) == 1
        added = len(first.new_text) - len(user)
        # pad the user's text so that this apply fits and the next one does not
        pad = "\n## Notes\n" + "".join(f"- note {i:03d} " + "n" * 50 + "\n" for i in range(200))
        pad = pad[: first.budget - len(user) - added - 60] + "\n"
        memory = user + pad
        (ws / "MEMORY.md").write_text(memory, encoding="utf-8")
        res = pr.apply(idx, now=NOW)
        assert res.wrote and res.dropped_sections == []
        after_first = (ws / "MEMORY.md").read_text(encoding="utf-8")
        assert after_first.startswith(memory)
        seed(idx, QUERIES2, first_day=LATER - timedelta(days=3))
        plan = pr.preview_apply(idx, now=LATER)
        assert [e.candidate.path for e in plan.entries] == ["memory/2026-11-25.md"]
        # the user's lookalike is older, but only promotion's own section may go
        assert plan.dropped_sections == ["2026-11-30 (1 entries)"]
        assert LOOKALIKE in plan.new_text and plan.new_text.startswith(memory)
        assert "(2026-11-30)" not in plan.new_text
        res = pr.apply(idx, plan)
        assert res.dropped_sections == plan.dropped_sections
        assert pr.undo(idx, now=LATER).restored
        assert (ws / "MEMORY.md").read_text(encoding="utf-8") == after_first
        # an undone promotion is no longer promotion's: its section, copied back by the
        # user, is theirs
        assert pr.undo(idx, now=LATER).restored
        (ws / "MEMORY.md").write_text(after_first, encoding="utf-8")
        plan = pr.preview_apply(idx, now=LATER)
        assert plan.dropped_sections == [] and plan.warnings
        assert plan.new_text.startswith(after_first)


def test_a_section_promotion_wrote_and_the_user_edited_is_kept(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        pr.apply(idx, now=NOW)
        text = (ws / "MEMORY.md").read_text(encoding="utf-8")
        written = pr.preview_apply(idx, now=NOW)  # nothing new: just the history's view
        assert written.entries == []
        from memory_core.promotion.plan import written_by_promotion

        w = written_by_promotion(idx)
        assert len(pr.promoted_sections(text, w)) == 1
        edited = text.replace("-->\n- ", "-->\n- (my edit) ", 1)
        assert pr.promoted_sections(edited, w) == []
        assert pr.promoted_sections(text.replace("\n", "\r\n"), w)  # line ends do not matter


# --------------------------------------------------------------------------- a full disk


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB tmpfs (needs the right to mount: skipped elsewhere)."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    mount, umount = shutil.which("mount"), shutil.which("umount")
    if not mount or not umount or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root and mount(8)")
    got = subprocess.run([mount, "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run([umount, "-l", str(mnt)], capture_output=True)


def _fill(fs: Path, leave: int) -> Path:
    """Fill ``fs`` until ``leave`` bytes are free (rounded to pages by tmpfs)."""
    filler = fs / "filler"
    with open(filler, "ab") as f:
        while True:
            st = os.statvfs(fs)
            free = st.f_bavail * st.f_frsize
            if free <= leave:
                break
            try:
                f.write(b"\0" * min(free - leave, 1 << 16))
                f.flush()
            except OSError as e:
                assert e.errno == errno.ENOSPC
                break
    return filler


def _promote(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_core", "promote", "--workspace", str(ws), "--provider",
         "none", "--now", NOW.isoformat(), *args], capture_output=True, text=True, timeout=120)


def test_a_full_disk_is_one_line_and_nothing_is_lost(small_fs: Path) -> None:
    ws = make_ws(small_fs)
    original = (ws / "MEMORY.md").read_bytes()
    with open_index(ws) as idx:
        seed(idx)
    assert _promote(ws, "--undo").returncode == 2  # nothing to undo; the lock file exists now
    promotions = ws / ".memory" / "promotions"
    kept = sorted(p.name for p in promotions.iterdir())
    refused = 0
    for leave in (0, 16384, 32768, 40960, 49152, 57344, 65536, 98304, 131072):
        filler = _fill(small_fs, leave)
        got = _promote(ws, "--apply")
        filler.unlink()
        assert "Traceback" not in got.stderr, got.stderr
        assert got.returncode in (0, 2), got.stderr
        if got.returncode == 0:
            break
        refused += 1
        lines = got.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memory-core: error:"), got.stderr
        assert (ws / "MEMORY.md").read_bytes() == original  # nothing lost, nothing half-done
        assert sorted(p.name for p in promotions.iterdir()) == kept  # no orphan backup
        with open_index(ws) as idx:
            assert state(idx).promotion_history() == []
            assert all(r["promoted_at"] is None for r in state(idx).recall_entries())
    assert refused, "the disk was never full enough to refuse the promotion"
    if got.returncode != 0:  # room again: the same promotion goes through
        got = _promote(ws, "--apply")
        assert got.returncode == 0, got.stderr
    with open_index(ws) as idx:
        assert len(state(idx).promotion_history()) == 1
    assert (ws / "MEMORY.md").read_bytes().startswith(original)
    assert b"openclaw-memory-promotion:" in (ws / "MEMORY.md").read_bytes()
