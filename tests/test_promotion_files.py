"""``MEMORY.md`` as the user set it up (issue #13 item 3) and the OS promotion lock (#9 item 8).

A symlinked ``MEMORY.md`` is written through to its target (the link kept); a read-only one
(no write bit: checked on the mode, since root ignores it) and an immutable one (``chattr +i``:
needs root and a filesystem with the flag; skipped otherwise) are refused with one line, and
nothing is half-done: no backup, no history, no mark. Real files, real engine; bytes compared.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.cli import main

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parent.parent
DIARY = """# 2026-11-20

## Crawler concurrency
- Raised CRAWLER_CONCURRENCY from 4 to 6 on crawl-01 and crawl-02 after the token bucket landed.
- PgBouncer pool stayed below its limit during the Sunday full crawl with six workers.
"""
USER_MEMORY = b"# Mine\n\n- Sam prefers short answers first.\n"
QUERIES = ["crawler concurrency", "PgBouncer pool limit", "Sunday full crawl",
           "token bucket crawl-01"]


def make_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_bytes(USER_MEMORY)
    (ws / "memory" / "2026-11-20.md").write_text(DIARY, encoding="utf-8")
    return ws


def seeded(ws: Path) -> MemoryIndex:
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    start = NOW - timedelta(days=len(QUERIES) - 1)
    for i, q in enumerate(QUERIES):
        pr.record_search(idx, q, idx.search(q).hits, now=start + timedelta(days=i))
    assert [c.passed for c in pr.list_candidates(idx, now=NOW)] == [True]
    return idx


def backups(ws: Path) -> list[str]:
    d = ws / pr.PROMOTIONS_DIR
    return sorted(p.name for p in d.iterdir() if "MEMORY.md" in p.name) if d.is_dir() else []


def assert_nothing_done(idx: MemoryIndex, ws: Path, n_history: int = 0) -> None:
    assert backups(ws) == [] if n_history == 0 else len(backups(ws)) == n_history
    with pr.state_of(idx) as st:
        assert len(st.promotion_history()) == n_history
        if n_history == 0:
            assert all(r["promoted_at"] is None for r in st.recall_entries())


def test_symlinked_memory_md_is_written_through_to_its_target(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    real = tmp_path / "elsewhere" / "long-term.md"
    real.parent.mkdir()
    (ws / "MEMORY.md").rename(real)
    (ws / "MEMORY.md").symlink_to(real)
    with seeded(ws) as idx:
        plan = pr.preview_apply(idx, now=NOW)
        res = pr.apply(idx, plan)
        assert res.wrote
        assert (ws / "MEMORY.md").is_symlink() and os.readlink(ws / "MEMORY.md") == str(real)
        assert real.read_bytes() == plan.new_text.encode("utf-8")
        assert real.read_bytes().startswith(USER_MEMORY)
        assert res.backup_path is not None and res.backup_path.read_bytes() == USER_MEMORY
        assert pr.undo(idx, now=NOW).restored
        assert (ws / "MEMORY.md").is_symlink() and real.read_bytes() == USER_MEMORY


def test_impact_preview_never_writes_through_a_symlinked_memory_md(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    real = tmp_path / "real-MEMORY.md"
    (ws / "MEMORY.md").rename(real)
    (ws / "MEMORY.md").symlink_to(real)
    with seeded(ws) as idx:
        rep = pr.impact_preview(idx, None, [{"query": "PgBouncer pool limit", "relevant": [
            {"path": "memory/2026-11-20.md", "line": 5}]}], now=NOW)
        assert rep.queries[0].promoted_rank is not None  # the copy did get the new section
    assert real.read_bytes() == USER_MEMORY


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(tmp_path / "missing.md")
    with seeded(ws) as idx:
        with pytest.raises(pr.PromotionError, match="does not exist"):
            pr.apply(idx, now=NOW)
        assert not (tmp_path / "missing.md").exists()
        assert_nothing_done(idx, ws)


def test_read_only_memory_md_is_refused_even_as_root(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    ws = make_ws(tmp_path)
    (ws / "MEMORY.md").chmod(0o444)
    with seeded(ws) as idx:
        with pytest.raises(pr.PromotionError, match="read-only") as e:
            pr.apply(idx, now=NOW)
        assert "\n" not in str(e.value)
        assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY
        assert_nothing_done(idx, ws)
    code = main(["promote", "--workspace", str(ws), "--provider", "none", "--now",
                 "2026-11-30T12:00:00Z", "--apply"])
    err = capsys.readouterr().err
    assert code == 2 and "read-only" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY
    assert (ws / "MEMORY.md").stat().st_mode & 0o777 == 0o444


def _chattr(path: Path, flag: str) -> bool:
    exe = shutil.which("chattr")
    if exe is None:
        return False
    return subprocess.run([exe, flag, str(path)], capture_output=True).returncode == 0


@pytest.fixture
def immutable_ws(tmp_path: Path):
    ws = make_ws(tmp_path)
    if not _chattr(ws / "MEMORY.md", "+i"):
        pytest.skip("chattr +i is not possible here (needs root and a filesystem with the "
                    "immutable flag, e.g. ext4)")
    _chattr(ws / "MEMORY.md", "-i")
    try:
        yield ws
    finally:
        _chattr(ws / "MEMORY.md", "-i")


def test_immutable_memory_md_is_refused_and_nothing_is_half_done(
        immutable_ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = immutable_ws
    with seeded(ws) as idx:
        assert _chattr(ws / "MEMORY.md", "+i")
        with pytest.raises(pr.PromotionError, match="immutable"):
            pr.apply(idx, now=NOW)
        assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY
        assert_nothing_done(idx, ws)
        code = main(["promote", "--workspace", str(ws), "--provider", "none", "--now",
                     "2026-11-30T12:00:00Z", "--apply"])
        err = capsys.readouterr().err
        assert code == 2 and "immutable" in err and "Traceback" not in err
        assert_nothing_done(idx, ws)

        # Undo of an applied promotion into a file made immutable since: refused, undoable later.
        assert _chattr(ws / "MEMORY.md", "-i")
        res = pr.apply(idx, now=NOW)
        promoted = (ws / "MEMORY.md").read_bytes()
        assert _chattr(ws / "MEMORY.md", "+i")
        with pytest.raises(pr.PromotionError, match="immutable"):
            pr.undo(idx, now=NOW)
        assert (ws / "MEMORY.md").read_bytes() == promoted
        assert_nothing_done(idx, ws, n_history=1)
        assert _chattr(ws / "MEMORY.md", "-i")
        assert pr.undo(idx, now=NOW).restored and res.backup_path is not None
        assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY


def test_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    code = ("import sys, time\nfrom pathlib import Path\n"
            "from memory_core.promotion import promotion_lock\n"
            "with promotion_lock(Path(sys.argv[1])):\n"
            "    print('locked', flush=True)\n    time.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(ws)], stdout=subprocess.PIPE,
                            text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(pr.PromotionError, match="another promotion"), \
                pr.promotion_lock(ws, timeout_s=0.3):
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        with pr.promotion_lock(ws, timeout_s=5):
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_failed_write_leaves_no_orphan_backup(immutable_ws: Path) -> None:
    """The write itself fails (the workspace folder is immutable, so no temp file can be made
    beside ``MEMORY.md``; the file's own checks pass): one line, and the backup made for it is
    removed, the history and marks rolled back."""
    ws = immutable_ws
    with seeded(ws) as idx:
        assert _chattr(ws, "+i")
        try:
            with pytest.raises(pr.PromotionError, match="could not be written") as e:
                pr.apply(idx, now=NOW)
            assert "\n" not in str(e.value)
        finally:
            _chattr(ws, "-i")
        assert (ws / "MEMORY.md").read_bytes() == USER_MEMORY
        assert_nothing_done(idx, ws)
        assert pr.apply(idx, now=NOW).wrote  # and it works once the folder is writable
