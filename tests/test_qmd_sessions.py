"""qmd's session export (``[qmd.sessions]``): transcripts as Markdown in their own collection.

The export itself is checked on files; the acceptance runs the real qmd 2.8.3 through the CLI:
``index --backend qmd`` exports and indexes a transcript, ``search --backend qmd`` finds it,
``get`` reads it, and an export whose transcript is gone is pruned (and no longer found).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory_core.backends.qmd import resolve_collections, session_export_dir
from memory_core.backends.qmd_sessions import (
    ExportRefused,
    export_name,
    export_sessions,
    render_session_markdown,
)
from memory_core.base.config import load_config
from tests.test_live import message

from .test_qmd import QMD, cli, make_workspace

SESSIONS = '[qmd.sessions]\nenabled = true\n'


def _transcript(ws: Path, name: str, *texts: str) -> Path:
    (ws / "sessions").mkdir(exist_ok=True)
    p = ws / "sessions" / name
    p.write_text("".join(message(i, t) for i, t in enumerate(texts)), encoding="utf-8")
    return p


def test_render_as_the_reference() -> None:
    assert render_session_markdown("abc", "User: hi\nAssistant: hello\n") == (
        "# Session abc\n\nUser: hi\nAssistant: hello\n")
    assert render_session_markdown("abc", "  ") == "# Session abc\n\n(empty)\n"
    assert export_name("sessions/main/abc.jsonl") == "abc.md"
    assert export_name("x/abc.jsonl.reset.2026-01-01T00:00:00Z") == (
        "abc.jsonl.reset.2026-01-01T00-00-00Z.md")
    assert export_name("../..") == "session.md"


def test_export_writes_keeps_prunes_and_honours_retention(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, SESSIONS + "retention_days = 2\n")
    cfg = load_config(ws)
    out = session_export_dir(ws, cfg)
    assert out == ws / ".memory" / "qmd" / "main" / "sessions"
    assert resolve_collections(ws, cfg)[-1].name == "sessions-main"
    _transcript(ws, "fresh.jsonl", "the zeppelin hangar code is ORCA-5521", "noted")
    old = _transcript(ws, "old.jsonl", "an old conversation")
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    r = export_sessions(ws, cfg, out)
    assert (r.exported, r.written, r.skipped) == (1, 1, 1)
    assert (out / "fresh.md").read_text() == (
        "# Session fresh\n\nUser: the zeppelin hangar code is ORCA-5521\nAssistant: noted\n")
    assert not (out / "old.md").exists()
    mtime = (out / "fresh.md").stat().st_mtime_ns
    assert export_sessions(ws, cfg, out).written == 0  # unchanged: not rewritten
    assert (out / "fresh.md").stat().st_mtime_ns == mtime
    (out / "notes-of-mine.md").write_text("# My notes\n")  # not ours: never pruned
    (ws / "sessions" / "fresh.jsonl").unlink()
    r = export_sessions(ws, cfg, out)
    assert r.pruned == 1 and not (out / "fresh.md").exists()
    assert (out / "notes-of-mine.md").exists()


@pytest.mark.parametrize("folder", ["memory", "sessions", ".", "memory/sub"])
def test_export_dir_never_overlaps_the_users_files(tmp_path: Path, folder: str) -> None:
    ws = make_workspace(tmp_path, SESSIONS + f'export_dir = "{folder}"\n')
    before = sorted(p.name for p in (ws / "memory").iterdir())
    with pytest.raises(ExportRefused, match="export_dir"):
        export_sessions(ws, load_config(ws), session_export_dir(ws, load_config(ws)))
    assert sorted(p.name for p in (ws / "memory").iterdir()) == before


@pytest.mark.skipif(QMD is None, reason="qmd not installed (run `bash "
                    "scripts/install-node-tools.sh`; needs npm)")
def test_exported_transcript_is_found_through_backend_qmd(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, SESSIONS)
    _transcript(ws, "chat-1.jsonl", "where do we keep the zeppelin hangar code?",
                "The zeppelin hangar code is ORCA5521, in the blue binder.")
    r = cli("index", "--backend", "qmd", "-w", str(ws))
    assert r.returncode == 0, r.stderr
    r = cli("search", "zeppelin hangar", "--backend", "qmd", "--json", "-w", str(ws))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["backend"] == "qmd" and "fallback" not in out, out
    top = out["results"][0]
    assert top["path"] == "qmd/sessions-main/chat-1.md" and top["source"] == "sessions"
    got = cli("get", top["path"], "--backend", "qmd", "--json", "-w", str(ws))
    assert got.returncode == 0, got.stderr
    assert "ORCA5521" in json.loads(got.stdout)["text"]
    st = json.loads(cli("status", "--backend", "qmd", "--json", "-w", str(ws)).stdout)
    names = [c["name"] for c in st["custom"]["qmd"]["collections"]]
    assert names[-1] == "sessions-main" and "sessions" in st["sources"]
    # the transcript goes: its export is pruned at the next update and no longer found
    (ws / "sessions" / "chat-1.jsonl").unlink()
    assert cli("index", "--backend", "qmd", "-w", str(ws)).returncode == 0
    assert not (session_export_dir(ws, load_config(ws)) / "chat-1.md").exists()
    r = cli("search", "zeppelin hangar", "--backend", "qmd", "--json", "-w", str(ws))
    assert all(h["source"] != "sessions" for h in json.loads(r.stdout)["results"])
