"""A workspace written mostly in Chinese/Japanese/Korean, indexed with the English-only default
model, gets a status warning that suggests the multilingual ``e5`` provider (issue #14.4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core.index import MemoryIndex
from memory_core.status import cjk_chunk_share, multilingual_warning

ZH = ("# 会议记录\n\n今天我们讨论了新的数据库迁移方案，决定下周一开始在测试环境中部署。"
      "负责人是王工程师，预计需要三天完成。\n")
EN = ("# Meeting notes\n\nWe discussed the new database migration plan and decided to start "
      "deploying it to the staging environment next Monday. Owner: Alice.\n")


def _workspace(root: Path, texts: list[str]) -> Path:
    mem = root / "memory"
    mem.mkdir(parents=True)
    for i, t in enumerate(texts):
        (mem / f"2026-01-{i + 1:02d}.md").write_text(t, encoding="utf-8")
    return root


def test_share_counts_chunks_not_characters() -> None:
    share, n = cjk_chunk_share([ZH, EN, "", "数据库 migration 方案"])
    assert n == 3  # the empty text has no letter
    assert share == pytest.approx(2 / 3)


def test_warning_only_for_english_only_model_and_mostly_cjk() -> None:
    assert multilingual_warning("local", "all-MiniLM-L6-v2", [ZH, ZH, EN]) is not None
    assert multilingual_warning("local", "all-MiniLM-L6-v2", [ZH, EN, EN]) is None
    assert multilingual_warning("e5", "multilingual-e5-small", [ZH, ZH]) is None
    assert multilingual_warning("none", "fts-only", [ZH, ZH]) is None
    assert multilingual_warning("local", "all-MiniLM-L6-v2", []) is None


def test_status_warns_on_a_chinese_workspace(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "zh", [ZH, ZH.replace("三天", "五天"), EN])
    with MemoryIndex.open(ws, provider="local") as idx:
        idx.sync()
        st = idx.status()
    assert st.provider == "local"
    warn = [w for w in st.warnings if "e5" in w]
    assert len(warn) == 1 and "English only" in warn[0]
    assert st.to_json()["warnings"] == st.warnings


def test_status_quiet_on_an_english_workspace(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "en", [EN, EN.replace("Alice", "Bob"), ZH])
    with MemoryIndex.open(ws, provider="local") as idx:
        idx.sync()
        st = idx.status()
    assert not [w for w in st.warnings if "e5" in w]
