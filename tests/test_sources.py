"""Sources: what is indexed, transcript rendering, and bad input that must not break anything."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memory_core.base.config import ExtraPath, MemoryConfig
from memory_core.write.sources import (
    SourceError,
    list_files,
    load,
    render_session,
    split_message,
)


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory" / "sub").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\n- prefers tabs\n")
    (ws / "memory" / "2026-11-01.md").write_text("# Diary\nfixed COOKIE_EXPIRED\n")
    (ws / "memory" / "sub" / "note.md").write_text("nested\n")
    (ws / "memory" / "ignore.txt").write_text("not markdown\n")
    return ws


def _paths(ws: Path, cfg: MemoryConfig) -> list[str]:
    return [f.path for f in list_files(ws, cfg).files]


def test_lists_memory_md_and_memory_dir(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    assert _paths(ws, MemoryConfig()) == ["MEMORY.md", "memory/2026-11-01.md",
                                          "memory/sub/note.md"]


def test_extra_paths_with_pattern_tilde_and_single_file(tmp_path: Path, monkeypatch) -> None:
    ws = _ws(tmp_path)
    notes = tmp_path / "home" / "notes"
    (notes / "deep").mkdir(parents=True)
    (notes / "a.md").write_text("a\n")
    (notes / "deep" / "b.md").write_text("b\n")
    (notes / "c.txt").write_text("c\n")
    (notes / "deep" / "skip.md").write_text("s\n")
    single = tmp_path / "single.md"
    single.write_text("one\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cfg = MemoryConfig()
    cfg.sources.extra_paths = [ExtraPath("~/notes", "**/[ab].md"), ExtraPath(str(single))]
    paths = _paths(ws, cfg)
    assert "../home/notes/a.md" in paths and "../home/notes/deep/b.md" in paths
    assert "../single.md" in paths
    assert not any(p.endswith(("c.txt", "skip.md")) for p in paths)


def test_symlink_loop_is_safe_and_paths_are_deduplicated(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "memory" / "sub" / "loop").symlink_to(ws / "memory", target_is_directory=True)
    (ws / "memory" / "alias.md").symlink_to(ws / "memory" / "2026-11-01.md")
    cfg = MemoryConfig()
    listing = list_files(ws, cfg)  # symlinks skipped by default, with a warning
    assert len(listing.files) == 3
    assert any("symlink" in w for w in listing.warnings)
    cfg.sources.follow_symlinks = True
    listing = list_files(ws, cfg)  # followed: the loop is cut, the alias de-duplicated
    reals = [os.path.realpath(f.abs_path) for f in listing.files]
    assert len(reals) == len(set(reals)) == 3
    assert any("loop" in w for w in listing.warnings)


def test_sessions_are_listed_with_archives(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    s = ws / "sessions"
    s.mkdir()
    for name in ("a.jsonl", "b.jsonl.reset.2026-11-01", "c.jsonl.bak", "d.txt"):
        (s / name).write_text("")
    assert [f.path for f in list_files(ws, MemoryConfig()).files if f.source == "sessions"] == [
        "sessions/a.jsonl", "sessions/b.jsonl.reset.2026-11-01"]


def _rec(role: str, content: object, ts: str = "2026-11-01T10:00:00Z") -> str:
    return json.dumps({"type": "message", "timestamp": ts,
                       "message": {"role": role, "content": content}})


def test_render_session_keeps_user_and_assistant_text_only() -> None:
    lines = [
        json.dumps({"type": "session", "id": "s1"}),
        _rec("user", "How do we   rotate\nthe key?"),
        _rec("assistant", [{"type": "text", "text": "Use vault."},
                           {"type": "toolCall", "name": "x"}]),
        _rec("toolResult", "secret output"),
        _rec("assistant", [{"type": "toolCall", "name": "only"}]),
        json.dumps({"type": "custom", "data": 1}),
        _rec("user", "System: [2026-11-01 10:00] cron fired"),
        '{"type":"message","id":"bad',
        "",
        _rec("assistant", "HEARTBEAT_OK"),
        _rec("user", "thanks"),
    ]
    r = render_session("\n".join(lines))
    assert r.content.split("\n") == ["User: How do we rotate the key?", "Assistant: Use vault.",
                                     "User: thanks"]
    assert r.line_map == [2, 3, 11]
    assert r.bad_lines == 1
    assert len(r.timestamps_ms) == 3


def test_long_messages_split_at_800_with_role_prefix() -> None:
    words = " ".join(f"w{i:04d}" for i in range(400))  # 2399 chars, 6 per word
    r = render_session(_rec("assistant", words))
    rendered = r.content.split("\n")
    assert len(rendered) == 4  # 133 words (797 chars) fit in 800
    assert all(line.startswith("Assistant: ") for line in rendered)
    assert all(len(line) - len("Assistant: ") <= 800 for line in rendered)
    assert " ".join(line.removeprefix("Assistant: ") for line in rendered) == words
    assert r.line_map == [1, 1, 1, 1]
    assert split_message("x" * 1700) == ["x" * 800, "x" * 800, "x" * 100]


def test_invalid_utf8_is_decoded_with_replacement_and_warned(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    p = ws / "memory" / "2026-11-02.md"
    p.write_bytes(b"good line\nbad \xff\xfe bytes\n")
    f = next(f for f in list_files(ws, MemoryConfig()).files if f.path.endswith("11-02.md"))
    doc = load(f)
    assert "bad \ufffd\ufffd bytes" in doc.text
    assert any("invalid UTF-8" in w for w in doc.warnings)


def test_binary_file_is_refused(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    (ws / "memory" / "blob.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00binary")
    f = next(f for f in list_files(ws, MemoryConfig()).files if f.path.endswith("blob.md"))
    with pytest.raises(SourceError, match="binary"):
        load(f)


def test_unreadable_file_is_refused(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    f = next(f for f in list_files(ws, MemoryConfig()).files if f.path.endswith("11-01.md"))
    f.abs_path.unlink()
    with pytest.raises(SourceError, match="cannot read"):
        load(f)
