"""qmd's update timers (``[qmd] on_boot, update_interval_ms, debounce_ms, embed_interval_ms``)
in the long-running faces, against the real qmd 2.8.3."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_core.backends import FallbackBackend, open_backend
from memory_core.backends.qmd_timers import QmdTimers
from memory_core.base.config import QmdConfig

from .test_qmd import QMD, make_workspace

pytestmark = pytest.mark.skipif(
    QMD is None, reason="qmd not installed (run `bash scripts/install-node-tools.sh`; needs npm)")


def _wait(cond: object, timeout: float = 30.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def _backend(tmp_path: Path, qmd: str) -> FallbackBackend:
    ws = make_workspace(tmp_path, "[qmd]\n" + qmd)
    b = open_backend(ws, "qmd")
    assert isinstance(b, FallbackBackend)
    return b


def test_boot_then_interval_updates_pick_up_a_new_file(tmp_path: Path) -> None:
    b = _backend(tmp_path, "update_interval_ms = 400\ndebounce_ms = 0\n")
    timers = QmdTimers(b, b.primary.q).start()
    try:
        assert _wait(lambda: len(timers.events) >= 1)
        assert timers.events[0].reason == "boot" and timers.events[0].ok
        (b.workspace / "memory" / "2026-12-01.md").write_text(
            "# 2026-12-01\n\nThe quokka sanctuary opens at nine.\n")
        n = len(timers.events)
        assert _wait(lambda: any(e.reason == "interval" for e in timers.events[n:]))
        # found without any sync of the search's own: the interval update indexed it
        assert b.primary.dirty is False
        res = b.search("quokka sanctuary")
        assert res.backend == "qmd" and res.hits[0].path == "memory/2026-12-01.md"
    finally:
        timers.stop()
        b.close()


def test_poke_debounces_and_off_means_off(tmp_path: Path) -> None:
    b = _backend(tmp_path, "update_interval_ms = 0\ndebounce_ms = 300\non_boot = false\n"
                           "embed_interval_ms = 0\n")
    timers = QmdTimers(b, b.primary.q).start()
    try:
        time.sleep(0.5)
        assert timers.events == []  # no boot update, no interval
        t0 = time.monotonic()
        timers.poke()
        time.sleep(0.15)
        timers.poke()  # a second change inside the window moves the update
        assert _wait(lambda: len(timers.events) == 1, 10)
        assert timers.events[0].reason == "watch" and time.monotonic() - t0 >= 0.45
        time.sleep(0.5)
        assert len(timers.events) == 1
    finally:
        timers.stop()
        b.close()


def test_embed_timer_follows_the_reference_rule() -> None:
    def sched(update: int, embed: int) -> bool:
        return QmdTimers(None, QmdConfig(update_interval_ms=update,
                                         embed_interval_ms=embed)).embed_timer_scheduled()

    assert not sched(300_000, 3_600_000)  # the update timer comes first and embeds when due
    assert sched(3_600_000, 60_000) and sched(0, 60_000)
    assert not sched(300_000, 0)


def test_watch_runs_qmd_timers(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, "[qmd]\nupdate_interval_ms = 500\ndebounce_ms = 100\n")
    proc = subprocess.Popen([sys.executable, "-m", "memory_core", "watch", "-w", str(ws),
                             "--backend", "qmd"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "qmd update (boot)" in line:
                (ws / "memory" / "2026-12-02.md").write_text("# x\n\nA new note.\n")
            if any("qmd update (watch)" in ln for ln in lines) and any(
                    "qmd update (interval)" in ln for ln in lines):
                break
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = "".join(lines)
    assert "qmd update (boot)" in text and "qmd update (interval)" in text, text
    assert "qmd update (watch)" in text, text  # the builtin watcher's sync poked qmd
