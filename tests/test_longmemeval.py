"""LongMemEval-S in the lab: the benchmark's session-level metric and the dataset's workspaces.

The fixture's figures were computed by hand from the benchmark's own definition
(``evaluate_retrieval_turn2session`` in ``src/retrieval/eval_utils.py`` of
xiaowu0162/LongMemEval) and agree with that code run on the same ranking as turn ids.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from memory_core.evaluation import run_eval
from memory_core.evaluation.datasets import DatasetMissing, Evidence, load_query_set
from memory_core.evaluation.longmemeval import render_session, stratified
from memory_core.evaluation.metrics import chunk_sessions, score_ranking, session_metrics

from .conftest import SHARED

# Sessions A and C hold the answer (lines 3 and 5); B and D do not. Ten chunks in the index,
# two of them cover evidence. The second chunk is A's, without the answer: the benchmark calls
# such a turn "noans", a session of its own, so it fills a slot of the growing cut.
RANKED = [("B", 1, 2), ("A", 1, 2), ("A", 3, 4), ("B", 3, 4), ("D", 1, 2), ("C", 5, 6)]
GOLD = [Evidence("A", 3), Evidence("C", 5)]
DCG_3 = 1 / math.log2(3)                    # gains 0, 0, 1 (ranks 1 and 2 undiscounted)
DCG_6 = 1 / math.log2(3) + 1 / math.log2(6)  # gains 0, 0, 1, 0, 0, 1
IDEAL = 1 + 1 / math.log2(2)                # two gold chunks first


def test_session_metrics_match_the_benchmark_on_a_hand_computed_fixture() -> None:
    m = session_metrics(RANKED, GOLD, n_corpus=10, n_gold=2)
    # k=1: the cut {B}: no gold session
    assert (m["recall_any@1"], m["recall_all@1"], m["ndcg_any@1"]) == (0.0, 0.0, 0.0)
    # k=3: {B, A-noans, A}: three sessions at cut 3; A found, C not
    assert (m["recall_any@3"], m["recall_all@3"]) == (1.0, 0.0)
    assert m["ndcg_any@3"] == pytest.approx(DCG_3 / IDEAL)
    # k=5: cut 5 covers {B, A-noans, A, D} (4): grown to 6, adding C
    assert (m["recall_any@5"], m["recall_all@5"]) == (1.0, 1.0)
    assert m["ndcg_any@5"] == pytest.approx(DCG_6 / IDEAL)
    assert m["ndcg_any@5"] == pytest.approx(0.5088912804)
    # k=10: the list runs out at 5 sessions: the cut runs past the corpus, nothing is added
    # k=30, 50: beyond the corpus, the cut is k itself
    for k in (10, 30, 50):
        assert (m[f"recall_any@{k}"], m[f"recall_all@{k}"]) == (1.0, 1.0)
        assert m[f"ndcg_any@{k}"] == pytest.approx(DCG_6 / IDEAL)


def test_noans_chunks_are_other_sessions_and_an_empty_list_finds_nothing() -> None:
    assert chunk_sessions(RANKED[:3], GOLD) == [("B", False), ("A#noans", False), ("A", True)]
    empty = session_metrics([], GOLD, n_corpus=10, n_gold=2)
    assert empty["recall_any@5"] == 0.0 and empty["recall_all@50"] == 0.0
    assert empty["ndcg_any@5"] == 0.0
    # the whole-file view (file recall_any) would count A's answerless chunk as A:
    # at k=3 the benchmark's cut is 3 chunks, so C is still missed
    assert session_metrics(RANKED, GOLD, 10, 2)["recall_all@3"] == 0.0
    scored = score_ranking(RANKED, GOLD, corpus=(10, 2))
    assert scored["session"]["recall_all@5"] == 1.0
    assert "session" not in score_ranking(RANKED, GOLD)


def _instance(qid: str, qtype: str, answer_role: str | None) -> dict:
    sessions = [
        [{"role": "user", "content": "I adopted a cat named Miso.\n\nShe is grey.",
          "has_answer": answer_role == "user"},
         {"role": "assistant", "content": "Congratulations on Miso!",
          "has_answer": answer_role == "assistant"}],
        [{"role": "user", "content": "Recommend a pasta recipe.", "has_answer": False},
         {"role": "assistant", "content": "Try cacio e pepe.", "has_answer": False}],
    ]
    return {"question_id": qid, "question_type": qtype, "question": "What is my cat's name?",
            "question_date": "2023/06/01 (Thu) 10:00", "answer": "Miso",
            "answer_session_ids": ["answer_1"], "haystack_session_ids": ["answer_1", "s2"],
            "haystack_dates": ["2023/05/20 (Sat) 07:47", "2023/05/20 (Sat) 21:44"],
            "haystack_sessions": sessions}


def test_a_session_is_a_diary_file_and_its_evidence_is_the_answer_turn_lines() -> None:
    turns = _instance("q", "t", "user")["haystack_sessions"][0]
    text, lines = render_session("answer_1", "2023/05/20 (Sat) 07:47", turns, "user")
    assert text == ("# Session answer_1 (2023/05/20 (Sat) 07:47)\n\nuser: I adopted a cat "
                    "named Miso.\nShe is grey.\n")
    assert lines == [3, 4]
    text, lines = render_session("answer_1", "d", turns, "all")
    assert "assistant: Congratulations on Miso!" in text and lines == [3, 4]


@pytest.fixture
def lme_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    data = [_instance("q1", "single-session-user", "user"),
            _instance("q2", "single-session-assistant", "assistant"),
            _instance("q3_abs", "single-session-user", None)]
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def test_the_dataset_loads_one_workspace_per_question_in_each_variant(lme_file: Path) -> None:
    qs = load_query_set(f"longmemeval-s:{lme_file}")
    # user turns only: q2's answer is the assistant's, so it has no target (skipped, as the
    # benchmark's averaging skips it); the abstention question is kept apart
    assert [q.qid for q in qs.queries] == ["q1", "q3_abs"]
    assert qs.skipped == {"no evidence in the variant": 1}
    assert [q.apart for q in qs.queries] == [False, True] and qs.sessions
    ws = qs.workspaces["q1"]
    assert ws is not None
    assert sorted(p.name for p in (ws / "memory").iterdir()) == [
        "2023-05-20-answer_1.md", "2023-05-20-s2.md"]
    assert qs.queries[0].relevant == (Evidence("memory/2023-05-20-answer_1.md", 3),
                                      Evidence("memory/2023-05-20-answer_1.md", 4))
    every = load_query_set(f"longmemeval-s-all:{lme_file}")
    assert [q.qid for q in every.queries] == ["q1", "q2", "q3_abs"]


def test_an_evaluation_reports_the_session_metrics_and_the_abstention_block(
        lme_file: Path) -> None:
    report = run_eval(None, f"longmemeval-s:{lme_file}", provider="none")
    m = report.metrics
    assert m["n_queries"] == 1 and m["apart"]["n_queries"] == 1
    assert m["session"]["recall_any@5"] == 1.0  # two sessions: the answer's is in any cut
    assert m["by_category"]["single-session-user"]["session"]["recall_all@50"] == 1.0
    assert "session" in report.per_query[0]["metrics"]


def test_a_missing_or_broken_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetMissing, match="not found"):
        load_query_set(f"longmemeval-s:{tmp_path / 'absent.json'}")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not LongMemEval JSON"):
        load_query_set(f"longmemeval-s:{bad}")


def test_the_stratified_subset_keeps_the_type_shares() -> None:
    items = [{"question_id": str(i), "question_type": "a" if i < 60 else "b"}
             for i in range(100)]
    sub = stratified(items, 10)
    assert [x["question_type"] for x in sub].count("a") == 6 and len(sub) == 10
    assert stratified(items, 10) == sub


@pytest.mark.skipif(not (SHARED / "datasets" / "longmemeval-s").is_dir(),
                    reason="LongMemEval-S is not beside the project")
def test_the_development_half_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(SHARED / "datasets"))
    qs = load_query_set("longmemeval-s#6")
    assert len(qs.workspaces) + sum(qs.skipped.values()) == 6
    assert all(q.relevant or q.apart for q in qs.queries)


def test_the_markdown_report_shows_the_session_table(lme_file: Path) -> None:
    text = run_eval(None, f"longmemeval-s:{lme_file}", provider="none").to_markdown()
    assert "Session level, LongMemEval's mapping" in text
    assert "| single-session-user (1) |" in text


def test_a_file_level_trec_run_names_the_benchmark_sessions(lme_file: Path, tmp_path: Path
                                                            ) -> None:
    from memory_core.cli import main

    out = tmp_path / "run.trec"
    assert main(["eval", "--queries", f"longmemeval-s:{lme_file}", "--provider", "none",
                 "--max-results", "50", "--run-out", str(out), "--no-progress"]) == 0
    docs = {line.split()[2] for line in out.read_text(encoding="utf-8").splitlines()}
    assert docs <= {"answer_1", "s2"} and "answer_1" in docs
