"""Tests of the evaluator: metrics on hand-computed cases, the leg audit, sweeps and loaders.

Metric cases are worked out by hand in the comments. Engine runs use the bundled demo workspace
(its own index under ``examples/demo-workspace/.memory``) or tiny synthetic data in ``tmp_path``;
the one test that reads ``../shared/datasets`` skips where it is absent.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memory_core.base.config import SearchSettings, profile_settings
from memory_core.cli import main
from memory_core.evaluation import (
    CollectedQuery,
    EvalConfig,
    EvalQuery,
    Evidence,
    available_query_sets,
    compare,
    datasets_dir,
    leg_audit,
    load_query_set,
    max_new_unit_sequence,
    run_eval,
    score_ranking,
    sweep,
)
from memory_core.read.candidates import Candidates, ChunkInfo, LegHit

L = math.log2


# ----------------------------------------------------------------------------- metrics


def test_duplicates_collapse_before_scoring() -> None:
    ranked = [("a.md", 1, 10), ("a.md", 1, 10), ("b.md", 1, 5), ("a.md", 20, 30)]
    m = score_ranking(ranked, [Evidence("a.md", 25)])
    # After collapsing: a:1-10, b:1-5, a:20-30 → the relevant chunk is at rank 3, not 4.
    assert m["n_results"] == 3
    assert m["chunk"]["first_rank"] == 3
    assert m["chunk"]["mrr@10"] == pytest.approx(1 / 3)
    assert m["chunk"]["success@1"] == 0.0
    assert m["chunk"]["success@3"] == 1.0


def test_only_the_first_chunk_covering_a_new_line_gains() -> None:
    ev = [Evidence("a.md", 3), Evidence("a.md", 12)]
    # rank 1 covers line 3 (gain), rank 2 covers line 3 again (overlap: no gain),
    # rank 3 is irrelevant, rank 4 covers line 12 (gain).
    ranked = [("a.md", 1, 10), ("a.md", 2, 4), ("b.md", 1, 9), ("a.md", 8, 15)]
    m = score_ranking(ranked, ev, ideal_chunks=2)
    c = m["chunk"]
    assert c["recall@1"] == 0.5 and c["recall@3"] == 0.5 and c["recall@5"] == 1.0
    assert c["success@1"] == 1.0
    dcg = 1 / L(2) + 1 / L(5)
    idcg = 1 / L(2) + 1 / L(3)
    assert c["ndcg@10"] == pytest.approx(dcg / idcg)
    # File level: a.md at rank 1, b.md at rank 2; one relevant file, found first.
    assert m["file"]["ndcg@10"] == pytest.approx(1.0)
    assert m["file"]["recall@1"] == 1.0


def test_ndcg_ideal_is_over_the_index_chunks() -> None:
    ev = [Evidence("a.md", 3), Evidence("a.md", 12)]
    ranked = [("a.md", 1, 15)]  # one chunk covers both lines: one gain
    # If the index only has that one chunk, the ideal earns one gain too: nDCG 1.
    assert score_ranking(ranked, ev, ideal_chunks=1)["chunk"]["ndcg@10"] == pytest.approx(1.0)
    # If the index could cover the lines with two chunks, the ideal earns two.
    two = score_ranking(ranked, ev, ideal_chunks=2)["chunk"]["ndcg@10"]
    assert two == pytest.approx((1 / L(2)) / (1 / L(2) + 1 / L(3)))
    # Nothing relevant in the index: nDCG is 0, not a division by zero.
    assert score_ranking([], ev, ideal_chunks=0)["chunk"]["ndcg@10"] == 0.0


def test_ideal_sequence_length() -> None:
    fs = frozenset
    assert max_new_unit_sequence([fs({0, 1}), fs({0, 1})], 10) == 1
    # {0}, then {0,1} adds 1, then {1,2} adds 2: three gains (greedy by size would also work).
    assert max_new_unit_sequence([fs({0}), fs({0, 1}), fs({1, 2}), fs({2})], 10) == 3
    assert max_new_unit_sequence([fs({0}), fs({1}), fs({2})], 2) == 2
    assert max_new_unit_sequence([frozenset()], 10) == 0
    # Many units: the greedy path still gives a valid count.
    many = [fs({i}) for i in range(30)]
    assert max_new_unit_sequence(many, 10) == 10


def test_file_level_beir_units() -> None:
    # BEIR: the whole file is the unit; two chunks of the same relevant file gain once.
    ev = [Evidence("memory/d1.md"), Evidence("memory/d2.md")]
    ranked = [("memory/d1.md", 1, 3), ("memory/d1.md", 4, 6), ("memory/x.md", 1, 2),
              ("memory/d2.md", 1, 2)]
    m = score_ranking(ranked, ev, ideal_chunks=2, ideal_files=2)
    assert m["chunk"]["recall@3"] == 0.5 and m["chunk"]["recall@5"] == 1.0
    assert m["chunk"]["ndcg@10"] == pytest.approx((1 + 1 / L(5)) / (1 + 1 / L(3)))
    # Files: d1 (1), x (2), d2 (3).
    assert m["file"]["ndcg@10"] == pytest.approx((1 + 1 / L(4)) / (1 + 1 / L(3)))


# ----------------------------------------------------------------------------- leg audit


def _cands() -> Candidates:
    chunks = {
        "gold": ChunkInfo("gold", "memory/a.md", "memory", 1, 5, "connection pool exhausted"),
        "v1": ChunkInfo("v1", "memory/b.md", "memory", 1, 5, "unrelated"),
        "v2": ChunkInfo("v2", "memory/c.md", "memory", 1, 5, "also unrelated"),
    }
    vector = (LegHit("v1", 0.3, 1, 0.3), LegHit("v2", 0.2, 2, 0.2))
    keyword = (LegHit("gold", 0.9, 1, -9.0),)
    return Candidates("pool", "hybrid", vector, keyword, chunks, 200)


def test_leg_audit_shows_the_gate_dropping_a_keyword_only_gold_hit() -> None:
    q = EvalQuery("q1", "pool", "keyword", (Evidence("memory/a.md", 3),))
    key = SearchSettings().fetch_key()
    col = [CollectedQuery(q, {key: _cands()}, 1, 1, {key: 0.0})]
    ref = leg_audit(col, EvalConfig("reference", SearchSettings()))
    row = ref["per_query"][0]
    # Reference: 0.3 × 0.9 = 0.27 < minScore 0.35, and the vector hits are below it too, so the
    # relaxed fallback keeps only keyword hits with score ≥ 0: the gold hit survives there.
    assert row["found_by"] == "keyword only" and row["keyword_rank"] == 1
    assert row["vector_rank"] is None
    # With a vector hit above the gate, the strict list is non-empty and the gold hit is gated.
    strong = Candidates("pool", "hybrid", (LegHit("v1", 0.9, 1, 0.9),), _cands().keyword,
                        _cands().chunks, 200)
    col2 = [CollectedQuery(q, {key: strong}, 1, 1, {key: 0.0})]
    row2 = leg_audit(col2, EvalConfig("reference", SearchSettings()))["per_query"][0]
    assert row2["gated"] == 1 and row2["kept"] == 0 and row2["first_rank"] is None
    dflt = profile_settings("default")
    col3 = [CollectedQuery(q, {dflt.fetch_key(): strong}, 1, 1, {dflt.fetch_key(): 0.0})]
    row3 = leg_audit(col3, EvalConfig("default", dflt))["per_query"][0]
    assert row3["gated"] == 0 and row3["kept"] == 1 and row3["first_rank"] is not None


# ----------------------------------------------------------------------------- loaders and runs


def test_demo_query_set_loads() -> None:
    assert "demo" in available_query_sets()
    qs = load_query_set("demo")
    assert len(qs.queries) == 27
    assert {q.category for q in qs.queries} >= {"keyword", "chinese", "session"}
    sess = [q for q in qs.queries if q.category == "session"]
    assert all(ev.path.startswith("sessions/") for q in sess for ev in q.relevant)


def _beir(folder: Path) -> None:
    folder.mkdir()
    docs = [
        {"_id": "d1", "title": "Pools", "text": "The connection pool was exhausted at noon."},
        {"_id": "d/2", "title": "Backups", "text": "Backups go to S3 Glacier every night."},
        {"_id": "d3", "title": "", "text": "The router runs WireGuard on VLAN 20."},
    ]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    qs = [{"_id": "q1", "text": "connection pool exhausted"},
          {"_id": "q2", "text": "where do backups go"},
          {"_id": "q3", "text": "not judged"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n"
                                               "q2\td/2\t1\n")


def test_beir_folder_becomes_a_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    _beir(tmp_path / "tiny")
    qs = load_query_set(tmp_path / "tiny")
    assert qs.level == "files" and len(qs.queries) == 2
    ws = qs.workspaces[""]
    assert ws is not None and str(ws).startswith(str(tmp_path / "cache"))
    files = sorted(p.name for p in (ws / "memory").iterdir())
    assert len(files) == 3 and "d1.md" in files
    assert (ws / "memory" / "d1.md").read_text().startswith("# Pools\n\n")
    rep = run_eval(None, qs, profile_settings("default"), provider="none", legs=True)
    assert rep.metrics["n_queries"] == 2
    assert rep.metrics["chunk"]["success@1"] == 1.0
    assert [r.label for r in rep.runs][1:] == ["vector leg", "keyword leg (or+bigrams)"]
    assert rep.run("keyword leg (or+bigrams)").metrics["file"]["success@1"] == 1.0
    assert "| default |" in rep.to_markdown()
    assert json.loads(rep.to_json())["runs"][0]["per_query"][0]["qid"] == "q1"


def test_sweep_rows_form_a_grid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    _beir(tmp_path / "tiny")
    grid = {"vector_weight": [0.0, 0.5, 1.0], "min_score": [0.0, 0.9]}
    rows = sweep(None, load_query_set(tmp_path / "tiny"), profile_settings("default"), grid,
                 provider="none")
    assert len(rows) == 6
    assert {(r["vector_weight"], r["min_score"]) for r in rows} == {
        (v, m) for v in (0.0, 0.5, 1.0) for m in (0.0, 0.9)}
    for r in rows:
        assert {"success@5", "recall@5", "mrr@10", "ndcg@10", "zero_result_rate"} <= set(r)
        assert r["n_queries"] == 2


def test_compare_lists_wins_and_losses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    _beir(tmp_path / "tiny")
    qs = load_query_set(tmp_path / "tiny")
    good = run_eval(None, qs, {"default": profile_settings("default")}, provider="none")
    # A keyword query that can never match loses every query.
    bad_settings = profile_settings("default")
    bad = run_eval(None, qs, {"no results": SearchSettings(**{
        **bad_settings.__dict__, "max_results": 0})}, provider="none")
    rows = compare(bad, good, "success@5")
    assert len(rows) == 2 and all(r["winner"] == "default" for r in rows)
    assert rows[0]["delta"] == 1.0


def test_cli_eval_on_a_query_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-05.md").write_text("# Monday\n\nThe 连接池耗尽 again at noon.\n")
    (ws / "memory" / "2026-01-06.md").write_text("# Tuesday\n\nRouter firmware updated.\n")
    qf = tmp_path / "q.jsonl"
    qf.write_text(json.dumps({"qid": "z1", "query": "连接池", "category": "chinese",
                              "relevant": [{"path": "memory/2026-01-05.md", "line": 3}]}) + "\n")
    out = tmp_path / "r.json"
    code = main(["eval", "--queries", str(qf), "--workspace", str(ws), "--provider", "none",
                 "--legs", "--compare-profile", "reference", "--out", str(out),
                 "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "| default |" in text and "| reference |" in text
    data = json.loads(out.read_text())
    assert data["reports"][0]["runs"][0]["metrics"]["chunk"]["success@1"] == 1.0
    assert data["reports"][1]["runs"][0]["metrics"]["chunk"]["success@1"] == 0.0


def test_cli_eval_says_when_the_data_is_absent(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(tmp_path / "nowhere"))
    assert main(["eval", "--queries", "xquad-zh", "--no-progress"]) == 2
    assert "not found" in capsys.readouterr().err
    assert "xquad-zh" not in available_query_sets()


def test_shared_locomo_queries_parse() -> None:
    """Reads ../shared/datasets when it is there (no indexing: parsing and judgments only)."""
    if not (datasets_dir() / "locomo-dev" / "queries-markdown.jsonl").is_file():
        pytest.skip("../shared/datasets is absent")
    qs = load_query_set("locomo-markdown:conv-30")
    assert qs.queries and all(q.workspace == "conv-30" for q in qs.queries)
    main_set = [q for q in qs.queries if not q.apart]
    assert {q.category for q in main_set} <= {"multi-hop", "temporal", "open-domain",
                                               "single-hop"}
    assert all(ev.line and ev.path.startswith("memory/") for q in main_set for ev in q.relevant)
    sess = load_query_set("locomo-sessions:conv-30")
    assert all(ev.path.startswith("sessions/") for q in sess.queries for ev in q.relevant)


def test_cli_eval_runs_one_named_conversation(capsys: pytest.CaptureFixture[str]) -> None:
    """A named set of one conversation brings its own workspace: no --workspace is asked for."""
    if not (datasets_dir() / "locomo-dev" / "queries-markdown.jsonl").is_file():
        pytest.skip("../shared/datasets is absent")
    assert main(["eval", "--queries", "locomo-markdown:conv-30", "--provider", "none",
                 "--limit", "2", "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reports"]


def test_one_dataset_at_two_paths_gets_two_cached_indexes(tmp_path: Path) -> None:
    """The eval cache outlives a checkout: the same data read from another path (a clone under
    another folder) must get its own index, not the one that serves the first path (CI failed
    on exactly that: a cache built under /work/shared, the data read from /check/work/shared)."""
    from memory_core.evaluation.datasets import QuerySet
    from memory_core.evaluation.runner import open_eval_index

    for where in ("a", "b"):
        (tmp_path / where / "memory").mkdir(parents=True)
        diary = tmp_path / where / "memory" / "2026-01-02.md"
        diary.write_text("# Notes\n\nPools open at nine.\n")
    qs = QuerySet("two", [], {"a": tmp_path / "a", "b": tmp_path / "b"},
                  {"a": tmp_path / "store", "b": tmp_path / "store"})
    paths = []
    for key in ("a", "b"):
        idx = open_eval_index(qs, key, provider="none")
        try:
            idx.sync()
            paths.append(idx.store_path)
            assert idx.search("pools").hits[0].path == "memory/2026-01-02.md"
        finally:
            idx.close()
    assert paths[0] != paths[1] and all(p.parent == tmp_path / "store" for p in paths)
