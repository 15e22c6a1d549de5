"""Dreaming finished (issue #12, spec §6.3–6.5): Light and REM staging, phaseBoost, the
contamination filters, and promoted entries bounded as the reference bounds them."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.dates import DAY_MS
from memory_core.promotion.memory_file import bullet_text
from memory_core.promotion.model import contamination

NOW = 1_795_428_000_000  # 2026-11-23T10:00:00Z
DAY = "2026-11-23"

LONG_DIARY = "# 2026-11-22\n\n## Crawler\n" + "".join(
    f"- Step {i}: the crawler fetched batch {i} of the price pages and stored them. "
    f"It took {i + 3} minutes.\n" for i in range(1, 25))


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-22.md").write_text(LONG_DIARY, encoding="utf-8")
    (ws / "memory" / "2026-11-21.md").write_text(
        "# 2026-11-21\n\n- The crawler pool size is 8 connections.\n", encoding="utf-8")
    (ws / "MEMORY.md").write_text("# Long-Term Memory\n\n- Price data pipeline.\n")
    return ws


def _open(ws: Path) -> MemoryIndex:
    return MemoryIndex.open(ws, provider="none", profile="reference")


def _recall(idx: MemoryIndex, path: str, start: int, end: int, snippet: str, day: int,
            query: str, score: float = 0.9) -> None:
    pr.record_tool_results(idx, query, [{"path": path, "startLine": start, "endLine": end,
                                         "score": score, "snippet": snippet,
                                         "source": "memory"}],
                           now=NOW - day * DAY_MS)


def test_light_and_rem_write_their_files_and_hit_keys(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with _open(ws) as idx:
        for d, q in ((0, "crawler pool"), (1, "pool size"), (2, "connections")):
            _recall(idx, "memory/2026-11-21.md", 3, 3,
                    "- The crawler pool size is 8 connections.", d, q)
        light = pr.run_light(idx, now=NOW)
        rem = pr.run_rem(idx, now=NOW)
        with pr.state_of(idx) as st:
            phases = st.phase_signals()
    key = "memory:memory/2026-11-21.md:3:3"
    assert light.written == [f"memory/dreaming/light/{DAY}.md"]
    assert rem.written == [f"memory/dreaming/rem/{DAY}.md"]
    text = (ws / light.written[0]).read_text()
    # newest first; daily ingestion (run by the phase) gave the same line its daily snippet
    assert text.startswith("# Light Sleep\n\n- Candidate: The crawler pool size is 8 "
                           "connections.\n  - confidence: 0.83\n")
    assert "  - evidence: memory/2026-11-21.md:3-3\n  - recalls: 3\n  - status: staged" in text
    rem_text = (ws / rem.written[0]).read_text()
    assert rem_text.startswith("# REM Sleep\n\n### Reflections\n")
    assert "### Possible Lasting Truths" in rem_text and "evidence=memory/2026-11-21.md:3-3" in (
        rem_text)
    assert key in light.keys and key in rem.keys
    assert (phases[key]["light_hits"], phases[key]["rem_hits"]) == (1, 1)
    # never a side effect: nothing under memory/dreaming before a phase is run
    assert not (tmp_path / "other").exists()


def test_phase_hits_feed_phase_boost(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with _open(ws) as idx:
        for d, q in ((0, "a pool"), (1, "b pool"), (2, "c pool")):
            _recall(idx, "memory/2026-11-21.md", 3, 3,
                    "- The crawler pool size is 8 connections.", d, q)
        before = {c.key: c for c in pr.list_candidates(idx, now=NOW, check_duplicates_of="none",
                                                       min_score=0)}
        # without daily ingestion, so that only the phase hits change the score
        pr.run_light(idx, now=NOW - DAY_MS, ingest=False)
        pr.run_light(idx, now=NOW, ingest=False)
        pr.run_rem(idx, now=NOW, ingest=False)
        after = {c.key: c for c in pr.list_candidates(idx, now=NOW, check_duplicates_of="none",
                                                      min_score=0)}
    key = "memory:memory/2026-11-21.md:3:3"
    assert before[key].components["phaseBoost"] == 0
    light = math.log1p(2) / math.log1p(6)  # two hits, the last one now (recency 1)
    rem = math.log1p(1) / math.log1p(6)
    want = 0.06 * light + 0.09 * rem
    assert after[key].components["phaseBoost"] == pytest.approx(want)
    assert after[key].score == pytest.approx(before[key].score + want)


def test_inline_storage_replaces_one_managed_block(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    cfg = pr.DreamingConfig(storage="inline")
    with _open(ws) as idx:
        _recall(idx, "memory/2026-11-21.md", 3, 3, "- The crawler pool size is 8.", 0, "pool")
        pr.run_light(idx, cfg, now=NOW)
        pr.run_light(idx, cfg, now=NOW)
        pr.run_rem(idx, cfg, now=NOW)
    text = (ws / "memory" / f"{DAY}.md").read_text()
    assert text.count("<!-- openclaw:dreaming:light:start -->") == 1
    assert text.count("## Light Sleep") == 1 and text.count("## REM Sleep") == 1
    assert not (ws / "memory" / "dreaming").exists()


def test_staged_output_and_fenced_blocks_are_never_promoted(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    cfg = pr.DreamingConfig(storage="both")
    with _open(ws) as idx:
        for d, q in ((0, "a pool"), (1, "b pool"), (2, "c pool"), (3, "d pool")):
            _recall(idx, "memory/2026-11-21.md", 3, 3,
                    "- The crawler pool size is 8 connections.", d, q)
        pr.run_sweep(idx, cfg, now=NOW)
        idx.sync()
        # a search that hits today's diary (its inline Light block) and the staging report
        hits = idx.search("Candidate crawler pool staged", max_results=10, min_score=0).hits
        assert any(h.path == f"memory/{DAY}.md" for h in hits)
        recorded = pr.record_search(idx, "staged", hits, now=NOW)
        with pr.state_of(idx) as st:
            keys = [e["key"] for e in st.recall_entries()]
        # a recall pointing inside the fenced block, forced into the store
        text = (ws / "memory" / f"{DAY}.md").read_text().split("\n")
        inside = next(i for i, line in enumerate(text, 1) if "status: staged" in line)
        _recall(idx, f"memory/{DAY}.md", inside, inside, "  - status: staged plain", 0, "q1")
        _recall(idx, f"memory/{DAY}.md", inside, inside, "  - status: staged plain", 0, "q2")
        _recall(idx, f"memory/{DAY}.md", inside, inside, "  - status: staged plain", 0, "q3")
        cands = pr.list_candidates(idx, now=NOW, check_duplicates_of="none", min_score=0)
        plan = pr.preview_apply(idx, [c for c in cands if c.passed], now=NOW)
    # the staged lines are contaminated and the reports are not short-term files: the search
    # recorded nothing from either
    assert not any(k.startswith("memory:memory/dreaming/") or f"/{DAY}.md:" in k for k in keys)
    assert recorded == 0
    assert all("Candidate:" not in e.bullet for e in plan.entries)
    fenced = f"memory:memory/{DAY}.md:{inside}:{inside}"
    assert fenced in plan.skipped and "dreaming block" in plan.skipped[fenced]


def test_contamination_filters() -> None:
    assert contamination("- Candidate: x - confidence: 0.62 - evidence: memory/2026-11-21.md:1-2"
                         " - recalls: 3 - status: staged") == "staged dreaming output"
    assert contamination("- Theme: `crawler` kept surfacing. ### Reflections - confidence: 1.00 "
                         "- evidence: memory/a.md:1-2 - note: reflection") == (
        "staged dreaming output")
    assert contamination("- keep [score=0.812 recalls=4 avg=0.700 source=memory/2026-11-20.md:1-2]"
                         ) == "promotion marker"
    assert contamination("User: what did we decide?") == "raw transcript turn"
    assert contamination("User: x", transcript_turns_ok=True) is None
    assert contamination("Session Key: agent:main:abc Session ID: 42") == "raw session metadata"
    assert contamination("Conversation Summary: we talked") == "conversation summary"
    assert contamination("```bash\nmake crawl\n```") == "code fence"
    assert contamination("[cron:nightly-export] delivered 3 files") == "cron delivery report"
    assert contamination('{"results": [{"path": "memory/a.md"}]}') == "raw tool output"
    assert contamination("The crawler pool size is 8 connections.") is None
    # recording and ranking apply 2026.9's filters only; the code-fence rule is for MEMORY.md
    assert not pr.is_contaminated("```bash\nmake crawl\n```")


def test_promoted_entries_are_snippets_within_the_bound(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    with _open(ws) as idx:
        idx.sync()
        hits = idx.search("crawler fetched batch price pages", max_results=3, min_score=0).hits
        chunk = next(h for h in hits if h.path == "memory/2026-11-22.md")
        full = idx.get(chunk.path, chunk.start_line, chunk.end_line - chunk.start_line + 1).text
        for d, q in ((0, "batch a"), (1, "batch b"), (2, "batch c"), (3, "batch d")):
            _recall(idx, chunk.path, chunk.start_line, chunk.end_line, chunk.snippet, d, q)
        cands = [c for c in pr.list_candidates(idx, now=NOW, check_duplicates_of="none")
                 if c.passed]
        plan = pr.preview_apply(idx, cands, now=NOW)
    assert len(full) > 1000 and plan.entries
    for e in plan.entries:
        text = e.bullet[2:e.bullet.rindex(" [score=")]
        assert len(text) <= 640 + 3 and text.endswith("...")
        assert len(text) < len(" ".join(full.split()))  # a snippet, not the whole chunk


def test_bullet_bound_cuts_at_a_sentence_or_word() -> None:
    sentences = " ".join(f"Sentence number {i} is about the crawler." for i in range(40))
    t = bullet_text("- " + sentences)
    assert t.endswith("crawler....") and len(t) <= 643
    words = " ".join(["word"] * 300)
    t = bullet_text(words)
    assert t.endswith("word...") and len(t) <= 643
    assert bullet_text("- short entry") == "short entry"


def _entry(d: dict[str, object]) -> pr.RecallEntry:
    """A recall entry from the reference's JSON shape (ISO times)."""
    from datetime import datetime

    def ms(v: object) -> int | None:
        return None if v is None else int(datetime.fromisoformat(
            str(v).replace("Z", "+00:00")).timestamp() * 1000)

    return pr.RecallEntry(
        str(d["key"]), str(d["path"]), int(d["startLine"]), int(d["endLine"]),  # type: ignore[arg-type]
        str(d["snippet"]), "memory", int(d["recallCount"]), int(d["dailyCount"]),  # type: ignore[arg-type]
        int(d["groundedCount"]), float(d["totalScore"]), float(d["maxScore"]),  # type: ignore[arg-type]
        ms(d["firstRecalledAt"]) or 0, ms(d["lastRecalledAt"]) or 0,
        list(d["queryHashes"]), list(d["recallDays"]), list(d["conceptTags"]),  # type: ignore[call-overload]
        None, ms(d.get("promotedAt")))


def test_rem_preview_matches_the_reference() -> None:
    """previewRemDreaming of OpenClaw 2026.5.20 on the same entries (golden from the engine)."""
    import json

    from memory_core.promotion.phases import rem_preview

    from .conftest import GOLDENS

    g = json.loads((GOLDENS / "openclaw" / "rem-preview.json").read_text(encoding="utf-8"))
    body, keys = rem_preview([_entry(e) for e in g["entries"]], 10, 0.75)
    assert body == g["bodyLines"] and keys == g["candidateKeys"]


def test_contamination_matches_2026_9() -> None:
    """isContaminatedDreamingSnippet of OpenClaw 2026.9.6 on 25 strings (golden from the
    engine): our 2026.9 rules agree on every one, with and without transcript turns allowed."""
    import json

    from .conftest import GOLDENS

    cases = json.loads((GOLDENS / "openclaw" / "contamination.json").read_text(encoding="utf-8"))
    assert len(cases) == 25
    for c in cases:
        assert (contamination(c["text"], ours=False) is not None) == c["contaminated"], c["text"]
        assert (contamination(c["text"], ours=False, transcript_turns_ok=True) is not None) == (
            c["allowingTranscriptTurns"]), c["text"]
        assert pr.is_contaminated(c["text"]) == c["contaminated"]


def test_sweep_on_the_fixture_home_matches_the_reference(tmp_path: Path) -> None:
    """The fixture home's real tool results recorded, then Light and REM: the same two staging
    reports, byte for byte, and the same phase hits as OpenClaw 2026.5.20's own sweep."""
    import json

    from memory_core.openclaw import mine_queries, open_home, transcripts_of_home

    from .conftest import GOLDENS
    from .openclaw_fixture import build_home

    g = json.loads((GOLDENS / "openclaw" / "sweep-main.json").read_text(encoding="utf-8"))
    home = open_home(build_home(tmp_path), "main")
    qs = mine_queries(transcripts_of_home(home.sessions_dir, home.agent))
    calls = sorted(((q.query, q.result_at or q.at, q.results_then) for q in qs),
                   key=lambda c: c[1] or 0)
    with home.open_index(provider="none") as idx:
        pr.replay_tool_results(idx, calls)
        reports = pr.run_sweep(idx, now=g["nowMs"])
        with pr.state_of(idx) as st:
            hits = {k: [v["light_hits"], v["rem_hits"]] for k, v in st.phase_signals().items()}
    assert sorted(p for r in reports for p in r.written) == sorted(g["files"])
    for rel, text in g["files"].items():
        assert (home.workspace / rel).read_text(encoding="utf-8") == text, rel
    assert hits == g["phase"]
