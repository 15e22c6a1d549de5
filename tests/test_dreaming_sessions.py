"""Session transcripts as recall signal 3 (issue 25 item 3, spec §6.2): the corpus file, the
recorded entries, only new lines taken, in both profiles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.base.dates import DAY_MS
from memory_core.promotion.policy import is_artifact
from memory_core.promotion.sessions import ingest_sessions, message_hash, session_scope
from memory_core.write.sources import list_files

NOW = 1_795_428_000_000  # 2026-11-23T10:00:00Z
T0 = NOW - 3 * 3600_000  # 07:00 the same day
OLD = NOW - 5 * DAY_MS  # outside Light's 2-day lookback


def _msg(role: str, text: str, ts: int) -> str:
    return json.dumps({"type": "message", "timestamp": ts,
                       "message": {"role": role, "content": [{"type": "text", "text": text}],
                                   "timestamp": ts}})


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "sessions").mkdir()
    (ws / "memory" / "2026-11-23.md").write_text("# 2026-11-23\n\n- Ferry at nine.\n")
    rows = [json.dumps({"type": "session", "id": "s1", "timestamp": OLD}),
            _msg("user", "what did we decide about   the crawler pool?", OLD),  # too old
            _msg("user", "ok", T0),  # "User: ok" is shorter than 12 characters
            _msg("user", "Which port does the staging database listen on?", T0),
            json.dumps({"type": "message", "message": {"role": "toolResult", "content": "x"}}),
            _msg("assistant", "The staging database listens on port 5433.", T0 + 1000)]
    (ws / "sessions" / "s1.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return ws


@pytest.mark.parametrize("profile", ["reference", "default"])
def test_transcript_lines_become_corpus_lines_and_daily_entries(tmp_path: Path,
                                                                profile: str) -> None:
    ws = _workspace(tmp_path)
    corpus = ws / "memory/.dreams/session-corpus/2026-11-23.txt"
    with MemoryIndex.open(ws, provider="none", profile=profile) as idx:
        rep = ingest_sessions(idx, now=NOW, lookback_days=2)
        assert rep.files == ["sessions/s1.jsonl"] and rep.lines == 2 and rep.recorded == 2
        assert corpus.read_text(encoding="utf-8").splitlines() == [
            "[main/sessions/s1.jsonl#L4] User: Which port does the staging database listen on?",
            "[main/sessions/s1.jsonl#L6] Assistant: The staging database listens on port 5433."]
        with pr.state_of(idx) as st:
            rows = {r["key"]: r for r in st.recall_entries()}
            events = st.recall_events("memory:memory/.dreams/session-corpus/2026-11-23.txt:2:2")
        rel = "memory/.dreams/session-corpus/2026-11-23.txt"
        assert sorted(rows) == [f"memory:{rel}:1:1", f"memory:{rel}:2:2"]
        e = pr.RecallEntry.from_row(rows[f"memory:{rel}:2:2"])
        assert (e.daily_count, e.recall_count, e.total_score) == (1, 0, pytest.approx(0.58))
        assert e.snippet == "Assistant: The staging database listens on port 5433."
        assert is_artifact(e)  # never a recall: the default's retention evicts it first
        # the corpus is the engine's state: no sync indexes it (the transcript itself is indexed)
        listed = [f.path for f in list_files(ws, idx.config).files]
        assert "sessions/s1.jsonl" in listed and not any(".dreams" in p for p in listed)
        assert [(ev["kind"], ev["query"]) for ev in events] == [
            ("daily", "__dreaming_sessions__:2026-11-23")]

        # a second sweep takes nothing new (the file is unchanged: skipped outright)
        again = ingest_sessions(idx, now=NOW + 60_000, lookback_days=2)
        assert (again.lines, again.skipped_files) == (0, ["sessions/s1.jsonl"])
        # one more line: only it is taken (the file changed, so it is rescanned from the
        # start and the lines already seen are recognised by their message hash)
        with (ws / "sessions" / "s1.jsonl").open("a", encoding="utf-8") as fh:
            fh.write(_msg("user", "And the production one listens on 5432, right?",
                          T0 + 5000) + "\n")
        third = ingest_sessions(idx, now=NOW + 120_000, lookback_days=2)
        assert third.lines == 1 and third.recorded == 1
        assert corpus.read_text(encoding="utf-8").splitlines()[2:] == [
            "[main/sessions/s1.jsonl#L7] User: And the production one listens on 5432, right?"]
        with pr.state_of(idx) as st:
            assert len(st.recall_entries()) == 3
            state = st.session_ingestion_state("main:sessions/s1.jsonl")
            seen = st.session_seen(session_scope("main", "s1.jsonl"))
        assert state is not None and state[3] == state[4] == 5  # 5 rendered lines, cursor at end
        assert message_hash("main:s1", f"ts:{T0 + 5000}",
                            "User: And the production one listens on 5432, right?") in seen


def test_light_and_rem_ingest_sessions_only_when_asked(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    corpus_dir = ws / "memory/.dreams/session-corpus"
    with MemoryIndex.open(ws, provider="none", profile="reference") as idx:
        # the reference without an OpenClaw config binding agents ingests no transcript
        light = pr.run_light(idx, now=NOW)
        assert light.sessions_ingested == 0 and not corpus_dir.exists()
        cfg = pr.DreamingConfig(ingest_sessions=True)
        light = pr.run_light(idx, cfg, now=NOW + 1000)
        rem = pr.run_rem(idx, cfg, now=NOW + 2000)
    assert (light.sessions_ingested, rem.sessions_ingested) == (2, 0)
    assert light.to_dict()["sessionsIngested"] == 2
    staged = (ws / light.written[0]).read_text(encoding="utf-8")
    # Light stages the session lines like any short-term entry, pointing into the corpus
    assert "evidence: memory/.dreams/session-corpus/2026-11-23.txt:2-2" in staged


def test_the_cap_per_file_leaves_a_cursor_the_next_sweep_continues_from(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    rows = [_msg("user", f"Question number {i} about the nightly export job?", T0 + i)
            for i in range(100)]
    (ws / "sessions" / "s1.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with MemoryIndex.open(ws, provider="none", profile="reference") as idx:
        first = ingest_sessions(idx, now=NOW, lookback_days=2)
        second = ingest_sessions(idx, now=NOW + 1000, lookback_days=2)
        third = ingest_sessions(idx, now=NOW + 2000, lookback_days=2)
    assert (first.lines, second.lines, third.lines) == (80, 20, 0)  # one file: 80 per sweep
    lines = (ws / "memory/.dreams/session-corpus/2026-11-23.txt").read_text().splitlines()
    assert len(lines) == 100 and lines[80].startswith("[main/sessions/s1.jsonl#L81] ")


def test_dream_sessions_on_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memory_core.cli import main

    ws = _workspace(tmp_path)
    common = ["--workspace", str(ws), "--provider", "none", "--now", "2026-11-23T10:00:00Z"]
    assert main(["dream", *common, "--phase", "light", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["sessionsIngested"] == 0
    assert main(["dream", *common, "--phase", "light", "--sessions", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["sessionsIngested"] == 2
    assert (ws / "memory/.dreams/session-corpus/2026-11-23.txt").read_text().count("\n") == 2


@pytest.mark.parametrize("profile", ["reference", "default"])
def test_a_promoted_corpus_line_keeps_its_prefix_in_the_reference_only(tmp_path: Path,
                                                                      profile: str) -> None:
    from memory_core.promotion.policy import tuned

    ws = _workspace(tmp_path)
    with MemoryIndex.open(ws, provider="none", profile=profile) as idx:
        ingest_sessions(idx, now=NOW, lookback_days=2)
        # the corpus lines' only signal is the ingestion query: let them pass every gate
        with tuned(min_distinct_queries=0):
            cands = [c for c in pr.list_candidates(idx, now=NOW, min_score=0.0,
                                                   min_recall_count=0, min_unique_queries=0,
                                                   check_duplicates_of="none")
                     if c.passed and c.start_line == 2]
            plan = pr.preview_apply(idx, cands, now=NOW)
    assert [c.path for c in cands] == ["memory/.dreams/session-corpus/2026-11-23.txt"]
    assert not plan.skipped, plan.skipped
    (entry,) = plan.entries
    if profile == "reference":  # 2026.9 writes the re-located corpus line as it is
        assert entry.bullet.startswith(
            "- [main/sessions/s1.jsonl#L6] Assistant: The staging database listens on port "
            "5433. [score=")
    else:  # the default: the transcript's words, no pointer into the engine's state
        assert entry.bullet == "- Assistant: The staging database listens on port 5433."
