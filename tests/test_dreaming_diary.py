"""The dream diary, DREAMS.md (issue 25 item 3, spec §6.1 step 6): a deterministic factual
entry between the diary markers, written atomically when asked, never promoted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.dates import DAY_MS
from memory_core.cli import main
from memory_core.promotion.diary import DIARY_END, DIARY_START, add_entry, diary_date

from .conftest import copy_demo

NOW = 1_795_428_000_000  # 2026-11-23T10:00:00Z
FACT = "- The crawler pool size is 8 connections."


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-21.md").write_text(f"# 2026-11-21\n\n{FACT}\n", encoding="utf-8")
    (ws / "MEMORY.md").write_text("# Long-Term Memory\n\n- Price data pipeline.\n")
    return ws


def _night(idx: MemoryIndex) -> list[pr.phases.PhaseReport]:
    for d, q in ((0, "crawler pool"), (1, "pool size"), (2, "connections")):
        pr.record_tool_results(idx, q, [{"path": "memory/2026-11-21.md", "startLine": 3,
                                         "endLine": 3, "score": 0.9, "snippet": FACT,
                                         "source": "memory"}], now=NOW - d * DAY_MS)
    return pr.run_sweep(idx, now=NOW)


def test_the_entry_says_what_light_staged_and_rem_found(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with MemoryIndex.open(ws, provider="none", profile="reference") as idx:
        reports = _night(idx)
        assert not (ws / "DREAMS.md").exists()  # never written unless asked
        assert pr.write_diary(idx, reports, now=NOW) == "DREAMS.md"
        text = (ws / "DREAMS.md").read_text(encoding="utf-8")
        assert text.startswith(f"# Dream Diary\n\n{DIARY_START}\n---\n\n"
                               "*November 23, 2026 at 10:00 AM UTC*\n\nLight sleep staged ")
        assert text.endswith(f"\n{DIARY_END}\n")
        assert f"\n- {FACT.removeprefix('- ')}\n" in text
        assert "Possible lasting truths:" in text and "[confidence=" not in text
        # a second night's entry goes before the end marker, after the first
        pr.write_diary(idx, [], ["The crawler pool size is 8 connections."], now=NOW + DAY_MS)
    again = (ws / "DREAMS.md").read_text(encoding="utf-8")
    assert again.startswith(text.removesuffix(f"{DIARY_END}\n"))
    assert again.count("\n---\n") == 2 and again.count(DIARY_END) == 1
    assert "*November 24, 2026 at 10:00 AM UTC*\n\nPromoted into MEMORY.md: 1 entry:" in again


def test_placement_keeps_what_the_file_had() -> None:
    entry = "\n---\n\n*d*\n\nx\n"
    assert add_entry("My notes.\n", entry) == (f"# Dream Diary\n\n{DIARY_START}{entry}\n"
                                               f"{DIARY_END}\n\nMy notes.\n")
    assert add_entry(f"top\n{DIARY_START}\nold\n", entry) == (
        f"top\n{DIARY_START}{entry}\n{DIARY_END}\n\nold\n")
    # midnight in the workspace's timezone is 12 AM, as en-US writes it
    assert diary_date(NOW + 5 * 3600_000, "Asia/Tokyo") == "November 24, 2026 at 12:00 AM JST"


def test_nothing_to_tell_writes_nothing_and_a_bad_file_is_refused(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with MemoryIndex.open(ws, provider="none", profile="reference") as idx:
        assert pr.write_diary(idx, [], [], now=NOW) is None
        assert not (ws / "DREAMS.md").exists()
        (ws / "DREAMS.md").write_bytes(b"\xff\xfe not text")
        with pytest.raises(pr.PromotionError, match=r"DREAMS\.md is not UTF-8"):
            pr.write_diary(idx, [], ["x"], now=NOW)
    assert (ws / "DREAMS.md").read_bytes() == b"\xff\xfe not text"


@pytest.mark.parametrize("profile", ["reference", "default"])
def test_the_diary_is_never_indexed_a_recall_or_a_candidate(tmp_path: Path, profile: str) -> None:
    ws = _workspace(tmp_path)
    with MemoryIndex.open(ws, provider="none", profile=profile) as idx:
        _night(idx)
        pr.write_diary(idx, [], ["The crawler pool size is 8 connections."], now=NOW)
        idx.sync()
        hits = idx.search("crawler pool size connections", on_hits=pr.recall_recorder(idx))
        assert hits.hits and all(h.path != "DREAMS.md" for h in hits.hits + hits.below_gate)
        assert pr.record_tool_results(idx, "crawler pool", [
            {"path": "DREAMS.md", "startLine": 1, "endLine": 9, "score": 0.9,
             "snippet": "Promoted into MEMORY.md: 1 entry", "source": "memory"}], now=NOW) == 0
        with pr.state_of(idx) as st:
            paths = {r["path"] for r in st.recall_entries()}
        cands = pr.list_candidates(idx, now=NOW, include_promoted=True)
    assert "DREAMS.md" not in paths and all(c.path != "DREAMS.md" for c in cands)


def test_dream_and_promote_write_the_diary_when_asked(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ws = copy_demo(tmp_path)
    (ws / "DREAMS.md").unlink(missing_ok=True)
    queries = Path(__file__).resolve().parents[1] / "examples" / "demo-queries.jsonl"
    common = ["--workspace", str(ws), "--provider", "none", "--now", "2026-11-30T12:00:00Z"]
    assert main(["replay", *common, "--queries", str(queries), "--days", "7", "--json"]) == 0
    capsys.readouterr()
    assert main(["dream", *common, "--json"]) == 0
    capsys.readouterr()
    assert not (ws / "DREAMS.md").exists()
    assert main(["dream", *common, "--diary", "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert "DREAMS.md" in reports[-1]["written"]
    before = (ws / "DREAMS.md").read_text(encoding="utf-8")
    assert "Light sleep staged " in before
    assert main(["promote", *common, "--apply", "--diary", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["wrote"]
    after = (ws / "DREAMS.md").read_text(encoding="utf-8")
    n = len(res["applied"])
    assert f"Promoted into MEMORY.md: {n} entr{'ies' if n > 1 else 'y'}:" in after
    assert after.count("\n---\n") == 2
