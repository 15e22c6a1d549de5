"""Promotion (spec §6): recall signals, §6.4 scoring and gates, applying to MEMORY.md, undo.

Every test runs the real engine on real files in a temporary workspace, keyword-only
(provider ``none``) so that no model loads. Times are pinned with ``now``.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.dates import day_start_ms
from memory_core.cli import main

try:
    from tests.conftest import ROOT, copy_demo
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from conftest import ROOT, copy_demo  # type: ignore[no-redef]

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

DIARY = """# 2026-11-20

## Crawler concurrency
- Raised CRAWLER_CONCURRENCY from 4 to 6 on crawl-01 and crawl-02 after the token bucket landed.
- PgBouncer pool stayed below its limit during the Sunday full crawl with six workers.
- Nightly crawl duration dropped to 5h05m; no login lockouts at the new concurrency.
"""

USER_MEMORY = "# Mine\n\n- Sam prefers short answers first.\n- 周五下午不要上线。\n"

QUERIES = ["crawler concurrency", "PgBouncer pool limit", "nightly crawl duration",
           "token bucket crawl-01"]


def make_ws(tmp_path: Path, memory: str | None = USER_MEMORY,
            diaries: dict[str, str] | None = None) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    if memory is not None:
        (ws / "MEMORY.md").write_bytes(memory.encode("utf-8"))
    for name, text in (diaries or {"2026-11-20.md": DIARY}).items():
        (ws / "memory" / name).write_text(text, encoding="utf-8")
    (ws / "memory" / "topic.md").write_text("# Topic\n\nCrawler concurrency notes (not dated).\n",
                                            encoding="utf-8")
    return ws


class _State:
    """The workspace's promotion state store, one short-lived connection per call."""

    def __init__(self, idx: MemoryIndex) -> None:
        self.idx = idx

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            with pr.state_of(self.idx) as st:
                return getattr(st, name)(*args, **kwargs)
        return call


def state(idx: MemoryIndex) -> Any:
    return _State(idx)


def open_index(ws: Path) -> MemoryIndex:
    idx = MemoryIndex.open(ws, provider="none")
    idx.sync()
    return idx


def seed(idx: MemoryIndex, queries: list[str] = QUERIES, *, first_day: datetime | None = None
         ) -> None:
    """Run each query through the real search, one per day, recorded at a pinned time."""
    start = first_day or NOW - timedelta(days=len(queries) - 1)
    for i, q in enumerate(queries):
        hits = idx.search(q).hits
        assert hits, q
        pr.record_search(idx, q, hits, now=start + timedelta(days=i))


def diary_key(idx: MemoryIndex, path: str = "memory/2026-11-20.md") -> str:
    keys = [r["key"] for r in state(idx).recall_entries() if r["path"] == path]
    assert len(keys) == 1, keys
    return keys[0]


# --------------------------------------------------------------------------- signals


def test_short_term_paths_and_contamination() -> None:
    assert pr.is_short_term_path("memory/2026-11-20.md")
    assert pr.is_short_term_path("memory/work/2026-11-20-standup.md")
    assert pr.is_short_term_path("memory/.dreams/session-corpus/2026-11-20.txt")
    assert pr.is_short_term_path("2026-11-20.md")
    assert not pr.is_short_term_path("MEMORY.md")
    assert not pr.is_short_term_path("memory/topic.md")
    assert not pr.is_short_term_path("memory/dreaming/deep/2026-11-20.md")
    assert not pr.is_short_term_path("notes/meeting-2026-11-12.md")
    assert pr.is_contaminated("x <!-- openclaw-memory-promotion:memory:a:1:2 --> y")
    # the Light phase's staged shape, as the reference's filter requires it (all five fields)
    assert pr.is_contaminated("- Candidate: foo - confidence: 0.62 - evidence: "
                              "memory/2026-11-20.md:1-4 - recalls: 3 - status: staged")
    assert not pr.is_contaminated("plain diary text")
    assert pr.query_hash("  Crawler Concurrency ") == hashlib.sha1(
        b"crawler concurrency").hexdigest()[:12]


def test_search_hook_records_only_diary_hits(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, memory="# Mine\n\n- Crawler concurrency is tuned in the diary.\n")
    with open_index(ws) as idx:
        res = idx.search("crawler concurrency")
        assert {h.path for h in res.hits} >= {"memory/2026-11-20.md", "MEMORY.md"}
        assert state(idx).recall_entries() == []  # recording is off by default
        record = pr.recall_recorder(idx)
        idx.search("crawler concurrency", on_hits=record)
        idx.search("Crawler Concurrency", on_hits=record)  # same query hash
        rows = state(idx).recall_entries()
        assert [r["path"] for r in rows] == ["memory/2026-11-20.md"]
        row = rows[0]
        assert row["recall_count"] == 2
        assert row["query_hashes"] == [pr.query_hash("crawler concurrency")]
        assert 0 < row["total_score"] <= 2 and row["max_score"] > 0
        assert row["key"] == f"memory:{row['path']}:{row['start_line']}:{row['end_line']}"
        assert "Crawler concurrency" in row["snippet"] and "\n" not in row["snippet"]
        assert 0 < len(row["concept_tags"]) <= pr.MAX_CONCEPT_TAGS
        assert "crawler" in row["concept_tags"]
        events = state(idx).recall_events(row["key"])
        assert [e["query"] for e in events] == ["Crawler Concurrency", "crawler concurrency"]


def test_query_hashes_and_days_are_capped(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        hits = idx.search("crawler concurrency").hits
        for i in range(40):
            pr.record_search(idx, f"crawler concurrency {i}", hits,
                             now=NOW - timedelta(days=40 - i))
        row = state(idx).recall_entry(diary_key(idx))
        assert row["recall_count"] == 40
        assert len(row["query_hashes"]) == pr.MAX_QUERY_HASHES
        assert row["query_hashes"][-1] == pr.query_hash("crawler concurrency 39")  # newest kept
        assert len(row["recall_days"]) == pr.MAX_RECALL_DAYS
        assert row["recall_days"][-1] == (NOW - timedelta(days=1)).strftime("%Y-%m-%d")


def test_daily_snippets_group_lines_under_their_heading() -> None:
    text = ("# 2026-11-20\n\n## Backups\n- one\n- two two\n- three\n- four\n- five five\n\n"
            "Paragraph line one\ncontinues here.\n\n## 09:30\n- x\n- time heading is generic\n")
    snips = pr.daily_snippets(text)
    assert [(s.start_line, s.end_line) for s in snips] == [(4, 7), (8, 8), (10, 11), (14, 15)]
    assert snips[0].snippet == "Backups: one; two two; three; four"
    assert snips[2].snippet == "Backups: Paragraph line one continues here."
    assert snips[3].snippet == "x; time heading is generic"  # no "09:30:" prefix
    assert all(s.score == pr.DAILY_SIGNAL_SCORE for s in snips)


# --------------------------------------------------------------------------- scoring (§6.4)


WORKED = """# 2026-11-10

## Backups
- Nightly pg_dump backup goes to the S3 bucket pipeline-backups; lifecycle moves it to Glacier.
"""


def test_worked_example_daily_only_scores_about_068_and_is_not_promoted(tmp_path: Path) -> None:
    """§6.4: a daily-note line ingested on 3 days, no live recalls → ≈0.68 < 0.80."""
    ws = make_ws(tmp_path, diaries={"2026-11-10.md": WORKED})
    day = datetime(2026, 11, 10, 21, 0, tzinfo=UTC)
    with open_index(ws) as idx:
        for d in range(3):
            rep = pr.ingest_daily(idx, now=day + timedelta(days=d))
            assert rep.files == ["memory/2026-11-10.md"] and rep.recorded == 1
        again = pr.ingest_daily(idx, now=day + timedelta(days=2, hours=1))
        assert again.skipped_files == ["memory/2026-11-10.md"]  # unchanged, same day
        # Out of the 2-day lookback: not ingested any more.
        assert pr.ingest_daily(idx, now=day + timedelta(days=3, hours=3)).files == []
        cands = pr.list_candidates(idx, now=day + timedelta(days=2), check_duplicates_of="none")
        assert len(cands) == 1
        c = cands[0]
        assert (c.path, c.start_line, c.end_line) == ("memory/2026-11-10.md", 4, 4)
        assert c.snippet.startswith("Backups: Nightly pg_dump backup")
        assert (c.signals, c.recall_count, c.daily_count) == (3, 0, 3)
        assert c.avg_score == pytest.approx(0.62)
        assert c.raw["diversity"] == pytest.approx(0.6)
        assert c.raw["consolidation"] == pytest.approx(0.504, abs=0.001)
        assert c.raw["recency"] == pytest.approx(1.0)
        assert len(c.concept_tags) >= 6 and c.raw["conceptual"] == 1.0
        assert c.score == pytest.approx(0.675, abs=0.002)
        assert round(c.score, 2) == 0.68
        assert not c.passed
        # the default profile also wants three distinct queries (daily ingestion has one)
        assert c.reasons == ["distinct queries 1 < 3 (the default profile's "
                             "minDistinctQueries)", f"score {c.score:.3f} < minScore 0.80"]


def test_score_entry_matches_the_formula() -> None:
    e = pr.RecallEntry("memory:memory/2026-11-01.md:1:3", "memory/2026-11-01.md", 1, 3, "x",
                       recall_count=4, daily_count=1, total_score=4.1, max_score=1.0,
                       last_recalled_at=pr.now_ms(NOW - timedelta(days=7)),
                       query_hashes=["a", "b", "c"],
                       recall_days=["2026-11-01", "2026-11-03", "2026-11-08", "2026-11-23"],
                       concept_tags=["one", "two", "three"])
    s = pr.score_entry(e, now=NOW)
    freq = math.log(6) / math.log(11)
    cons = 0.55 * min(1, math.log(4) / math.log(5)) + 0.45 * 1.0
    recency = 2 ** -0.5  # 7 days at a 14-day half-life
    want = (0.24 * freq + 0.30 * (4.1 / 5) + 0.15 * (4 / 5) + 0.15 * recency + 0.10 * cons
            + 0.06 * 0.5)
    assert s.score == pytest.approx(want)
    assert s.raw["recency"] == pytest.approx(recency)
    assert sum(s.components.values()) == pytest.approx(s.score)
    assert s.components["phaseBoost"] == 0.0
    heavy = pr.score_entry(e, now=NOW, weights={"relevance": 3.0})
    assert heavy.score != pytest.approx(s.score)
    assert sum(pr.normalize_weights({"relevance": 3.0}).values()) == pytest.approx(1.0)


def test_recalled_entry_passes_every_gate(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        cands = pr.list_candidates(idx, now=NOW)
        assert len(cands) == 1
        c = cands[0]
        assert c.passed and c.reasons == [] and c.rank == 1
        assert (c.recall_count, c.unique_queries, c.signals) == (4, 4, 4)
        assert c.score >= pr.DEFAULT_MIN_SCORE
        assert set(c.components) == {*pr.WEIGHTS, "phaseBoost"}
        assert sum(c.components.values()) == pytest.approx(c.score)
        assert c.components["relevance"] == pytest.approx(0.30 * c.avg_score)
        assert c.duplicate is not None and not c.duplicate.likely  # MEMORY.md says otherwise
        d = c.to_dict()
        assert d["startLine"] == c.start_line and d["components"]["frequency"] > 0


def test_gates_give_reasons(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx, QUERIES[:2])
        c = pr.list_candidates(idx, now=NOW, check_duplicates_of="none")[0]
        assert not c.passed
        assert "signals 2 < minRecallCount 3" in c.reasons
        assert "unique queries/days 2 < minUniqueQueries 3" in c.reasons
        seed(idx, QUERIES[2:], first_day=NOW)
        ok = pr.list_candidates(idx, now=NOW, min_score=0.5, check_duplicates_of="none")[0]
        assert ok.passed
        # the last recall was at NOW + 1 day
        late = pr.list_candidates(idx, now=NOW + timedelta(days=32), min_score=0,
                                  check_duplicates_of="none")[0]
        assert any(r.startswith("last recalled 31.0 days ago > maxAgeDays 30") for r in
                   late.reasons)
        none = pr.list_candidates(idx, now=NOW, min_score=0, limit=0,
                                  check_duplicates_of="none")
        assert none[0].passed  # limit 0: no limit
        capped = pr.list_candidates(idx, now=NOW, min_score=0, max_age_days=-1, limit=-1,
                                    check_duplicates_of="none")
        assert capped[0].passed


# --------------------------------------------------------------------------- applying (§6.5)

# the default profile writes no score metadata (issue 25; the reference's shape is checked in
# tests/test_promotion_failures.py)
BULLET_RE = re.compile(r"^- (?!.*\[score=).+$")


def test_apply_writes_the_section_and_undo_restores_exact_bytes(tmp_path: Path) -> None:
    # CRLF line ends and no newline at the end: "byte-identical" has to mean it
    original = "# Mine\r\n\r\n- Sam prefers short answers first.\r\n- 周五下午不要上线。"
    ws = make_ws(tmp_path, memory=original)
    with open_index(ws) as idx:
        seed(idx)
        key = diary_key(idx)
        plan = pr.preview_apply(idx, now=NOW)
        assert [e.key for e in plan.entries] == [key]
        assert "+## Promoted From Short-Term Memory (2026-11-30)" in plan.diff
        assert (ws / "MEMORY.md").read_bytes() == original.encode()  # preview writes nothing
        res = pr.apply(idx, plan)
        assert res.wrote and res.applied == [key]
        data = (ws / "MEMORY.md").read_bytes()
        text = data.decode()
        assert text.startswith(original + "\r\n\r\n## Promoted From Short-Term Memory (2026-11-30)")
        lines = text.split("\r\n")
        i = lines.index(f"<!-- openclaw-memory-promotion:{key} -->")
        assert BULLET_RE.match(lines[i + 1]), lines[i + 1]
        assert text.endswith("\r\n")
        assert res.backup_path and res.backup_path.read_bytes() == original.encode()
        assert state(idx).recall_entry(key)["promoted_at"] == pr.now_ms(NOW)
        # the index was re-synced: the promoted text is searchable in MEMORY.md
        assert any(h.path == "MEMORY.md" for h in idx.search("PgBouncer pool").hits)
        assert pr.list_candidates(idx, now=NOW) == []

        u = pr.undo(idx, now=NOW)
        assert u.restored, u.message
        assert (ws / "MEMORY.md").read_bytes() == original.encode()
        assert state(idx).recall_entry(key)["promoted_at"] is None
        assert [c.key for c in pr.list_candidates(idx, now=NOW)] == [key]
        again = pr.undo(idx, now=NOW)
        assert not again.restored and "nothing to undo" in again.message


def test_apply_creates_memory_md_and_undo_removes_it(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, memory=None)
    with open_index(ws) as idx:
        seed(idx)
        res = pr.apply(idx, now=NOW)
        assert res.wrote and res.backup_path is None
        assert (ws / "MEMORY.md").read_text().startswith(
            "# Long-Term Memory\n\n\n## Promoted From Short-Term Memory (2026-11-30)\n")
        assert pr.undo(idx, now=NOW).restored
        assert not (ws / "MEMORY.md").exists()


def test_applying_twice_adds_nothing(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        cands = pr.list_candidates(idx, now=NOW)
        first = pr.apply(idx, cands, now=NOW)
        assert first.wrote
        after = (ws / "MEMORY.md").read_bytes()
        second = pr.apply(idx, cands, now=NOW + timedelta(hours=1))
        assert not second.wrote and second.applied == []
        assert second.skipped[cands[0].key].startswith("already promoted")
        assert (ws / "MEMORY.md").read_bytes() == after
        assert len(state(idx).promotion_history()) == 1
    # A fresh index (the recall store lost, e.g. another provider's index): the marker in
    # MEMORY.md still prevents a second copy, and the entry is reconciled.
    ws_db = ws / ".memory"
    for p in ws_db.glob("*.sqlite*"):
        p.unlink()
    with open_index(ws) as idx:
        seed(idx)
        key = diary_key(idx)
        assert pr.list_candidates(idx, now=NOW) == []  # the marker hides it
        c = pr.list_candidates(idx, now=NOW, include_promoted=True)[0]
        assert not c.passed and "marker" in c.reasons[0]
        res = pr.apply(idx, [replace_passed(c)], now=NOW)
        assert not res.wrote and res.reconciled == [key]
        assert (ws / "MEMORY.md").read_bytes() == after
        assert state(idx).recall_entry(key)["promoted_at"] is not None


def replace_passed(c: pr.PromotionCandidate) -> pr.PromotionCandidate:
    c.passed, c.reasons = True, []
    return c


def test_edited_diary_is_relocated_or_skipped_with_reason(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    diary = ws / "memory" / "2026-11-20.md"
    with open_index(ws) as idx:
        seed(idx)
        (c,) = pr.list_candidates(idx, now=NOW)
        # Two lines inserted above: found again, exactly, two lines lower.
        diary.write_text("Preface added later.\n\n" + DIARY, encoding="utf-8")
        plan = pr.preview_apply(idx, [c], now=NOW)
        (e,) = plan.entries
        assert (e.start_line, e.end_line) == (c.start_line + 2, c.end_line + 2)
        assert e.quality == 3
        # the re-located range is what the store keeps (the default writes no source metadata)
        pr.apply(idx, plan)
        assert (state(idx).recall_entry(c.key)["start_line"],
                state(idx).recall_entry(c.key)["end_line"]) == (e.start_line, e.end_line)
        pr.undo(idx, now=NOW)
        # The last line rewritten: the unchanged part is still found (snippet contains it).
        diary.write_text(DIARY.replace("Nightly crawl duration dropped to 5h05m",
                                       "Nightly crawl now takes 5 hours"), encoding="utf-8")
        (e,) = pr.preview_apply(idx, [c], now=NOW).entries
        assert e.quality == 1 and e.end_line < c.end_line
        assert "5 hours" not in e.bullet
        # Everything rewritten: skipped, with the reason.
        diary.write_text("# 2026-11-20\n\nNothing of the sort happened today.\n",
                         encoding="utf-8")
        plan = pr.preview_apply(idx, [c], now=NOW)
        assert plan.entries == [] and not plan.diff
        assert "no longer found in memory/2026-11-20.md" in plan.skipped[c.key]
        res = pr.apply(idx, [c], now=NOW)
        assert not res.wrote and (ws / "MEMORY.md").read_text() == USER_MEMORY
        diary.unlink()
        assert "is gone" in pr.preview_apply(idx, [c], now=NOW).skipped[c.key]


def test_relocate_loose_match_for_daily_snippets() -> None:
    lines = ["# Day", "", "## Backups", "- one thing", "- another thing"]
    loc = pr.relocate(lines, "Backups: one thing; another thing", 1, 1)
    assert loc is not None and (loc.start_line, loc.end_line, loc.loose) == (4, 5, True)
    assert pr.relocate(lines, "Backups: something else entirely", 4, 5) is None
    # A surviving heading alone is not "the snippet contains the window".
    assert pr.relocate(["## Backups", "- new text"], "## Backups - old text that is long", 1, 2
                       ) is None


def promoted_block(day: str, n: int, size: int) -> str:
    out = f"\n## Promoted From Short-Term Memory ({day})\n\n"
    for i in range(n):
        out += (f"<!-- openclaw-memory-promotion:memory:memory/{day}.md:{i}:{i} -->\n"
                f"- {'x' * size} [score=0.900 recalls=3 avg=0.900 "
                f"source=memory/{day}.md:{i}-{i}]\n")
    return out


def legacy_history(idx: MemoryIndex, days: dict[str, int]) -> None:
    """History rows as versions before the section text was recorded left them (keys and
    day only), for the blocks :func:`promoted_block` makes: promotion wrote those."""
    with pr.state_of(idx) as st, st.transaction():
        for day, n in days.items():
            st.promotion_add(day_start_ms(day) + 3_600_000, "MEMORY.md", None, None, "0" * 64,
                             [f"memory:memory/{day}.md:{i}:{i}" for i in range(n)], [])


def test_budget_compaction_drops_oldest_promoted_sections_only(tmp_path: Path) -> None:
    user = "# Mine\n\n" + "".join(f"- user fact {i} " + "u" * 60 + "\n" for i in range(45))
    edited = promoted_block("2025-12-01", 1, 50).replace(
        "## Promoted From Short-Term Memory (2025-12-01)\n\n",
        "## Promoted From Short-Term Memory (2025-12-01)\n\nMy own note under it.\n")
    memory = (user + edited + promoted_block("2026-01-01", 10, 250)
              + promoted_block("2026-02-01", 6, 250) + "\n## Later notes\n- keep me\n")
    ws = make_ws(tmp_path, memory=memory)
    assert len(memory) < pr.MEMORY_FILE_MAX_CHARS - pr.BUDGET_RESERVE_CHARS
    with open_index(ws) as idx:
        seed(idx)
        legacy_history(idx, {"2025-12-01": 1, "2026-01-01": 10, "2026-02-01": 6})
        plan = pr.preview_apply(idx, now=NOW)
        assert plan.entries
        assert plan.dropped_sections == ["2026-01-01 (10 entries)"]
        new = plan.new_text
        assert len(new) <= plan.budget and plan.warnings == []
        assert "(2026-01-01)" not in new and "memory/2026-01-01.md" not in new
        assert "(2026-02-01)" in new and "(2025-12-01)" in new  # newer, and user-edited, kept
        assert "My own note under it." in new and "- keep me" in new
        assert new.startswith(user)
        assert re.search(r"\(2026-11-30\)\n\n<!-- [^\n]+ -->\n- [^\n]+\n$", new)
        res = pr.apply(idx, plan)
        assert res.dropped_sections == plan.dropped_sections
        assert pr.undo(idx, now=NOW).restored
        assert (ws / "MEMORY.md").read_text() == memory


def test_over_budget_with_only_user_text_is_written_with_a_warning(tmp_path: Path) -> None:
    memory = "# Mine\n\n" + "- " + "u" * 9990 + "\n"
    ws = make_ws(tmp_path, memory=memory)
    with open_index(ws) as idx:
        seed(idx)
        plan = pr.preview_apply(idx, now=NOW)
        assert plan.entries and plan.new_text.startswith(memory)
        assert plan.warnings and "over its budget" in plan.warnings[0]


def test_undo_keeps_lines_appended_after_the_apply(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        pr.apply(idx, now=NOW)
        edited = (ws / "MEMORY.md").read_text() + "- my edit after the promotion\n"
        (ws / "MEMORY.md").write_text(edited)
        u = pr.undo(idx, now=NOW)
        assert u.restored, u.message
        assert (ws / "MEMORY.md").read_text() == USER_MEMORY + "- my edit after the promotion\n"


def test_undo_keeps_an_edit_above_the_promoted_block(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        pr.apply(idx, now=NOW)
        text = (ws / "MEMORY.md").read_text()
        (ws / "MEMORY.md").write_text(text.replace("# Mine", "# Mine, edited"))
        assert pr.undo(idx, now=NOW).restored
        assert (ws / "MEMORY.md").read_text() == USER_MEMORY.replace("# Mine", "# Mine, edited")


def test_undo_refuses_when_the_promoted_block_was_edited_unless_forced(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        pr.apply(idx, now=NOW)
        text = (ws / "MEMORY.md").read_text()
        marker = "<!-- openclaw-memory-promotion:"
        edited = text.replace(marker, "- my line inside it\n" + marker)
        (ws / "MEMORY.md").write_text(edited)
        u = pr.undo(idx, now=NOW)
        assert not u.restored and "changed since the promotion" in u.message
        assert (ws / "MEMORY.md").read_text() == edited
        f = pr.undo(idx, force=True, now=NOW)
        assert f.restored and (ws / "MEMORY.md").read_text() == USER_MEMORY
        assert f.saved_current is not None and f.saved_current.read_text() == edited


def test_stale_preview_is_refused(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        plan = pr.preview_apply(idx, now=NOW)
        (ws / "MEMORY.md").write_text(USER_MEMORY + "- added meanwhile\n")
        with pytest.raises(pr.PromotionError, match="preview again"):
            pr.apply(idx, plan)
        assert state(idx).promotion_history() == []


def test_promotion_lock(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with pr.promotion_lock(ws):
        with pytest.raises(pr.PromotionError, match="another promotion"), \
                pr.promotion_lock(ws, timeout_s=0.1):
            pass
    with pr.promotion_lock(ws, timeout_s=0.1):  # released: free again at once
        pass


# --------------------------------------------------------------------------- beyond the reference


def test_near_duplicate_check(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, memory="# Mine\n\n- Unrelated fact about lunch.\n- " +
                 DIARY.split("\n")[3][2:] + "\n")
    with open_index(ws) as idx:
        line = "Raised CRAWLER_CONCURRENCY from 4 to 6 on crawl-01 and crawl-02 after the token " \
               "bucket landed."
        same, other = pr.check_duplicates(idx, [line, "Completely different words here."])
        assert same is not None and same.likely and same.jaccard == pytest.approx(1.0)
        assert same.line == 4 and same.cosine is None  # keyword-only: no embeddings
        assert other is not None and not other.likely and other.coverage == 0.0


def test_impact_preview_reruns_queries_on_a_copy(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        before_rows = state(idx).recall_entries()
        gold = [{"path": "memory/2026-11-20.md", "line": 4}]
        rep = pr.impact_preview(idx, None, [{"qid": 1, "query": "PgBouncer pool limit",
                                             "relevant": gold}], now=NOW)
        (q,) = rep.queries
        assert q.before_rank == 1 and q.after_rank is not None
        assert q.promoted_rank is not None  # the promoted bullet is now found in MEMORY.md
        assert rep.to_dict()["recallBefore"] == 1
        assert (ws / "MEMORY.md").read_text() == USER_MEMORY
        assert state(idx).recall_entries() == before_rows  # previews record nothing


def test_explain(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        seed(idx)
        key = diary_key(idx)
        info = pr.explain(idx, key, now=NOW)
        assert info["passed"] and info["gates"]["minScore"]["passed"]
        assert info["entry"]["recallCount"] == 4
        assert info["located"]["found"] and info["located"]["quality"] == 3
        assert {e["query"] for e in info["events"]} == set(QUERIES)
        assert sum(info["components"].values()) == pytest.approx(info["score"], abs=1e-5)
        with pytest.raises(pr.PromotionError):
            pr.explain(idx, "memory:nope:1:1")


def test_replay_spread_and_repeat(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        rep = pr.replay(idx, QUERIES, 4, now=NOW, daily=False)
        assert (rep.searches, rep.recalls_recorded, rep.candidates) == (4, 4, 1)
        assert (rep.first_day, rep.last_day) == ("2026-11-27", "2026-11-30")
        row = state(idx).recall_entry(diary_key(idx))
        assert row["recall_days"] == ["2026-11-27", "2026-11-28", "2026-11-29", "2026-11-30"]
        assert row["last_recalled_at"] <= pr.now_ms(NOW)
        rep2 = pr.replay(idx, QUERIES[:1], 3, now=NOW, mode="repeat", reset=True, daily=False)
        assert rep2.searches == 3
        row = state(idx).recall_entry(diary_key(idx))
        assert row["recall_count"] == 3 and len(row["query_hashes"]) == 1
        assert len(row["recall_days"]) == 3  # one query on 3 days passes minUniqueQueries 3


def test_replay_refuses_days_out_of_range_before_searching(tmp_path: Path) -> None:
    """Issue #32: the bound on ``days`` is the library's (the CLI and the page only report it):
    out of 1 to 3660 is a ``ValueError`` naming the range, and nothing is recorded."""
    ws = make_ws(tmp_path)
    with open_index(ws) as idx:
        for days in (0, 3661, 99_999_999):
            with pytest.raises(ValueError, match=f"at least 1 and at most 3660 \\(got {days}\\)"):
                pr.replay(idx, QUERIES[:1], days, now=NOW, daily=False)
        assert state(idx).recall_entries() == []
        assert pr.replay(idx, QUERIES[:1], 3660, now=NOW, daily=False).searches == 1


# --------------------------------------------------------------------------- CLI on the demo


def test_demo_replay_then_promote_json_then_apply(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    ws = copy_demo(tmp_path)
    original = (ws / "MEMORY.md").read_bytes()
    queries = ROOT / "examples" / "demo-queries.jsonl"
    now = "2026-11-30T12:00:00Z"
    common = ["--workspace", str(ws), "--provider", "none", "--now", now]
    assert main(["replay", *common, "--queries", str(queries), "--days", "7", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["searches"] == 27 and rep["recallsRecorded"] > 0 and rep["candidates"] > 0

    assert main(["promote", *common, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cands = out["candidates"]
    assert 1 <= len(cands) <= pr.DEFAULT_LIMIT
    for c in cands:
        assert {"key", "path", "startLine", "endLine", "snippet", "score", "components"} <= set(c)
        assert set(c["components"]) == {*pr.WEIGHTS, "phaseBoost"}
        assert c["score"] >= pr.DEFAULT_MIN_SCORE and c["passed"]
        assert pr.is_short_term_path(c["path"])
        assert c["key"] == f"memory:{c['path']}:{c['startLine']}:{c['endLine']}"

    assert main(["promote", *common, "--explain", cands[0]["key"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"]["key"] == cands[0]["key"]

    assert main(["promote", *common, "--apply", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    # issue #34: the entry the replay made a candidate (2026-10-20) is recalled for the
    # crawler concurrency, the Postgres version and the report time, each changed by a later
    # diary: nothing of it is written, and it says so (apply/undo: the tests above)
    # (what else passed, from lines no later diary changed, may be written)
    stale = "memory:memory/2026-10-20.md:1:26"
    assert stale in res["skipped"] and res["skipped"][stale].startswith(
        "its lines are superseded")
    written = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert written.startswith(original.decode("utf-8").rstrip("\n"))
    for old_value in ("8 workers per host", "PostgreSQL 15.4", "02:00"):
        assert old_value not in written[len(original):]
