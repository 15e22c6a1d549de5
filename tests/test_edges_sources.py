"""What may be read (issue #13 item 8): Markdown only, one rule for search and ``memory_get``.

Before: ``extra_paths = [{ path = "/etc", pattern = "passwd" }]`` indexed ``/etc/passwd`` and
search returned its lines while ``memory_get`` refused the same file; a ``.md`` symlink to a
non-Markdown file was indexed. Now a pattern only narrows the ``.md`` files of an extra path, a
symlink's target must be Markdown too, and :func:`memory_core.write.sources.is_readable_memory_path`
decides for both the listing and ``memory_get``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_core import MemoryIndex, PathRefused
from memory_core.base.config import ExtraPath, MemoryConfig
from memory_core.write.sources import is_readable_memory_path, list_files


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Long-term\nLONG_TERM_NOTE\n")
    (ws / "memory" / "2026-11-01.md").write_text("# Diary\nDIARY_NOTE\n")
    etc = tmp_path / "etc"
    (etc / "sub").mkdir(parents=True)
    (etc / "passwd").write_text("root:x:0:0:PASSWD_SECRET:/root:/bin/bash\n")
    (etc / "hosts.txt").write_text("127.0.0.1 HOSTS_SECRET\n")
    (etc / "notes.md").write_text("ETC_NOTES_MD\n")
    (etc / "sub" / "deep.md").write_text("ETC_DEEP_MD\n")
    (etc / "secret.txt").write_text("SYMLINKED_SECRET\n")
    return ws, etc


def _config(etc: Path, pattern: str, follow: bool = False) -> dict[str, object]:
    return {"sources": {"extra_paths": [{"path": str(etc), "pattern": pattern}],
                        "follow_symlinks": follow},
            "provider": {"provider": "none", "fallback": []}}


@pytest.mark.parametrize("pattern", ["passwd", "*", "**/*", "*.txt", "**/hosts*"])
def test_a_pattern_never_widens_past_markdown(tmp_path: Path, pattern: str) -> None:
    ws, etc = _setup(tmp_path)
    with MemoryIndex.open(ws, overrides=_config(etc, pattern)) as idx:
        idx.sync()
        paths = {f.path for f in idx.files()}
        assert not any(p.endswith(("passwd", ".txt")) for p in paths), paths
        for secret in ("PASSWD_SECRET", "HOSTS_SECRET"):
            assert not idx.search(secret).hits
        with pytest.raises(PathRefused):
            idx.get(str(etc / "passwd"))
        if pattern in ("*", "**/*"):
            assert "../etc/notes.md" in paths  # the .md files the pattern matches are kept
            assert idx.get(str(etc / "notes.md")).text.startswith("ETC_NOTES_MD")


def test_pattern_narrows_both_search_and_memory_get(tmp_path: Path) -> None:
    ws, etc = _setup(tmp_path)
    with MemoryIndex.open(ws, overrides=_config(etc, "sub/*.md")) as idx:
        idx.sync()
        assert {f.path for f in idx.files()} >= {"../etc/sub/deep.md"}
        assert "../etc/notes.md" not in {f.path for f in idx.files()}
        assert idx.get(str(etc / "sub" / "deep.md")).text.startswith("ETC_DEEP_MD")
        with pytest.raises(PathRefused):  # not matched by the pattern: not memory
            idx.get(str(etc / "notes.md"))


@pytest.mark.parametrize("follow", [False, True])
def test_md_symlink_to_a_non_markdown_file_is_refused(tmp_path: Path, follow: bool) -> None:
    ws, etc = _setup(tmp_path)
    (ws / "memory" / "alias.md").symlink_to(etc / "secret.txt")
    (etc / "link.md").symlink_to(etc / "hosts.txt")
    with MemoryIndex.open(ws, overrides=_config(etc, "**/*.md", follow)) as idx:
        idx.sync()
        paths = {f.path for f in idx.files()}
        assert "memory/alias.md" not in paths and "../etc/link.md" not in paths
        assert not idx.search("SYMLINKED_SECRET").hits and not idx.search("HOSTS_SECRET").hits
        for p in ("memory/alias.md", str(etc / "link.md")):
            with pytest.raises(PathRefused):
                idx.get(p)


def test_one_rule_decides_for_listing_and_reading(tmp_path: Path) -> None:
    """Every file under the workspace and the extra path: listed ⇔ readable by memory_get."""
    ws, etc = _setup(tmp_path)
    (ws / "memory" / "alias.md").symlink_to(etc / "secret.txt")
    (ws / "memory" / "ok-link.md").symlink_to(ws / "MEMORY.md")
    (ws / "memory" / "plain.txt").write_text("x\n")
    for follow in (False, True):
        cfg = MemoryConfig()
        cfg.sources.extra_paths = [ExtraPath(str(etc), "**/*.md")]
        cfg.sources.follow_symlinks = follow
        listed = {os.path.abspath(f.abs_path) for f in list_files(ws, cfg).files}
        everything = [p for root in (ws, etc) for p in root.rglob("*")
                      if p.is_file() or p.is_symlink()]
        for p in everything:
            readable = is_readable_memory_path(ws, cfg, str(p))
            if str(p) in listed:
                assert readable, p
            if not str(p).endswith(".md") or p.name in ("alias.md",):
                assert not readable, p
        # the symlink to MEMORY.md is read through (its target is memory) but not listed twice
        assert is_readable_memory_path(ws, cfg, str(ws / "memory" / "ok-link.md"))
