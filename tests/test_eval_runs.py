"""Saved runs, labels as qrels, chunk-level TREC runs, and the peers' session-level metrics.

Engine runs use a copy of the demo workspace with the keyword-only provider (``none``): fast, and
two profiles still rank it differently.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.base.config import profile_settings
from memory_core.cli import main
from memory_core.evaluation import Evidence, load_query_set, run_eval, score_ranking
from memory_core.evaluation.labels import DEMO_LABELS, LabelStore, labels_dir, load_labelled
from memory_core.evaluation.run_metrics import score_run
from memory_core.evaluation.runs import compare_saved, list_runs, load_run, save_run, side_by_side
from memory_core.evaluation.trec import read_qrels, read_run


def _md_bytes(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in ws.rglob("*.md")}


def test_demo_labels_are_the_demo_queries() -> None:
    demo = load_query_set("demo")
    labels = load_labelled(DEMO_LABELS / "queries.jsonl", DEMO_LABELS / "qrels.txt")
    assert [(q.qid, q.query, q.category, q.relevant) for q in labels.queries] == \
        [(q.qid, q.query, q.category, q.relevant) for q in demo.queries]


def test_saved_runs_list_compare_and_side_by_side(demo_ws: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    qs = load_query_set("demo")
    runs = tmp_path / "runs"
    saved = {}
    for profile in ("reference", "default"):
        rep = run_eval(demo_ws, qs, {profile: profile_settings(profile, "none")},
                       profile=profile, provider="none")
        saved[profile] = save_run(rep, qs, f"demo {profile}", root=runs)
    assert [r.name for r in list_runs(runs)] == ["demo default", "demo reference"]
    ref = load_run(saved["reference"].id, runs)
    meta = ref.meta
    assert meta["query_set"] == "demo" and meta["settings"]["fusion"] == "reference"
    assert meta["code"]["version"] and meta["index"]["workspace"]["chunks"] > 0
    assert meta["index"]["workspace"]["generation"] >= 1 and meta["index"]["workspace"]["store"]
    assert meta["metrics"]["n_queries"] == 27
    trec = read_run(ref.trec_file)
    assert set(trec) <= {q.qid for q in qs.queries}
    assert all(not d.startswith("/") and "#L" not in d for ds in trec.values() for d, _ in ds)
    assert read_qrels(ref.qrels_file)["demo-q01"] == {"memory/2026-11-03.md": 1}

    same = compare_saved(ref, ref)
    assert all(v["delta"] == 0 and v["p_value"] >= 0.99 for v in same.metrics.values())
    cmp = compare_saved(ref, saved["default"], rounds=2000)
    m = cmp.metrics["ndcg@10"]
    assert m["a"] == pytest.approx(ref.meta["metrics"]["chunk"]["ndcg@10"])
    assert m["wins"] + m["losses"] > 0 and m["ci"][0] <= m["delta"] <= m["ci"][1]
    changed = (cmp.losses() or cmp.wins())[0]
    rows = side_by_side(ref, saved["default"], changed["qid"])
    per_q = {r["qid"]: r for r in ref.per_query}[changed["qid"]]
    assert [r["A gold"] for r in rows][:len(per_q["gold"])] == per_q["gold"]
    assert [r["A hit"] for r in rows][:len(per_q["results"])] == per_q["results"]
    assert any(r["A gold"] or r["B gold"] for r in rows)

    assert main(["eval", "runs", "--runs-dir", str(runs), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed] == [saved["default"].id, saved["reference"].id]
    assert main(["eval", "compare", saved["reference"].id, saved["default"].id, "--runs-dir",
                 str(runs), "--json", "--rounds", "500"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["ndcg@10"]["delta"] == pytest.approx(m["delta"])
    assert main(["eval", "compare", "nope", saved["default"].id, "--runs-dir", str(runs)]) == 2
    assert "no saved run nope" in capsys.readouterr().err


def test_chunk_level_run_out_scores_against_line_labels(demo_ws: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    out = tmp_path / "chunks.trec"
    report = tmp_path / "report.json"
    assert main(["eval", "--queries", str(DEMO_LABELS / "queries.jsonl"), "--qrels",
                 str(DEMO_LABELS / "qrels.txt"), "--workspace", str(demo_ws), "--provider",
                 "none", "--no-progress", "--run-out", str(out), "--run-level", "chunk",
                 "--out", str(report)]) == 0
    assert "TREC run (chunk level" in capsys.readouterr().err
    run = read_run(out)
    assert all("#L" in d for ds in run.values() for d, _ in ds)
    ours = json.loads(report.read_text())["reports"][0]["runs"][0]["per_query"]
    trec = score_run(run, read_qrels(DEMO_LABELS / "qrels.txt"))
    for row in ours:  # the same first gold rank whether judged by lines or by the run file
        assert trec[row["qid"]]["first_rank"] == row["metrics"]["chunk"]["first_rank"], row["qid"]


def test_qrels_flag_errors_are_one_line(demo_ws: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    assert main(["eval", "--queries", str(DEMO_LABELS / "queries.jsonl"), "--qrels",
                 str(DEMO_LABELS / "nope.txt"), "--workspace", str(demo_ws)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["eval", "--queries", str(DEMO_LABELS / "queries.jsonl"), "--qrels",
                 str(DEMO_LABELS / "qrels.txt")]) == 2
    assert "needs --workspace" in capsys.readouterr().err


def test_labels_marked_saved_beside_the_index_and_evaluated(demo_ws: Path) -> None:
    before = _md_bytes(demo_ws)
    query = "PgBouncer port"
    with MemoryIndex.open(demo_ws, provider="none") as idx:
        idx.sync()
        hits = idx.search(query).hits
        assert len(hits) >= 2
        store = LabelStore(labels_dir(idx.store_path))
        first = hits[0]
        # another file: its middle line cannot sit in the first hit's chunk
        second = next(h for h in hits[1:5] if h.path != first.path)
        qid = store.mark(query, f"{first.path}#L{first.start_line}-L{first.end_line}", True)
        assert store.mark(query, f"{second.path}#L{second.start_line}-L{second.end_line}",
                          False) == qid  # the same query keeps its qid
        assert store.folder == idx.store_path.parent / "labels"
        assert store.judgements(query)[f"{first.path}#L{first.start_line}-L{first.end_line}"] == 1
        qs = store.query_set()
        top = run_eval(idx, qs).metrics["chunk"]
        assert top["success@1"] == 1.0
        # now only the second hit is relevant: success@1 must fall, success@5 stay
        store.mark(query, f"{first.path}#L{first.start_line}-L{first.end_line}", None)
        store.mark(query, f"{second.path}#L{second.start_line}-L{second.end_line}", True)
        moved = run_eval(idx, store.query_set()).metrics["chunk"]
        assert moved["success@1"] == 0.0 and moved["success@5"] == 1.0
    assert _md_bytes(demo_ws) == before  # labels never land in the workspace's Markdown
    assert not list(demo_ws.glob("*.qrels")) and (store.folder / "qrels.txt").is_file()


def test_labels_import_jsonl_and_beir_style_files(tmp_path: Path) -> None:
    store = LabelStore(tmp_path / "labels")
    assert store.import_files(DEMO_LABELS.parent / "demo-queries.jsonl") == 27
    (tmp_path / "q.jsonl").write_text('{"_id": "x1", "text": "pool size"}\n')
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nx1\tmemory/a.md\t1\n")
    assert store.import_files(tmp_path / "q.jsonl", tmp_path / "q.tsv") == 1
    qs = store.query_set(tmp_path)
    assert len(qs.queries) == 28
    assert qs.queries[-1].relevant == (Evidence("memory/a.md"),)


def test_recall_any_and_recall_all_at_file_level() -> None:
    # files ranked: a, b, c (from the chunks); relevant: a and c
    ranked = [("a.md", 1, 2), ("a.md", 5, 6), ("b.md", 1, 2), ("c.md", 1, 2)]
    m = score_ranking(ranked, [Evidence("a.md", 1), Evidence("c.md", 2)])["file"]
    assert m["recall_any@1"] == 1.0 and m["recall_all@1"] == 0.0
    assert m["recall_all@3"] == 1.0 and m["recall_any@5"] == 1.0
    miss = score_ranking([("b.md", 1, 2)], [Evidence("a.md", 1)])["file"]
    assert miss["recall_any@10"] == 0.0 and miss["recall_all@10"] == 0.0


def test_beir_folder_with_other_qrels_and_its_own_ids_in_the_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "tiny"
    (folder / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Pools", "text": "The connection pool was exhausted."},
            {"_id": "d/2", "title": "Backups", "text": "Backups go to S3 Glacier nightly."}]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "connection pool"}\n'
                                          '{"_id": "q2", "text": "backups glacier"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    other = tmp_path / "other.qrels"  # judges q2 too, in TREC form and the corpus' own ids
    other.write_text("q1 0 d1 1\nq2 0 d/2 1\n")
    out = tmp_path / "run.trec"
    report = tmp_path / "r.json"
    assert main(["eval", "--queries", str(folder), "--qrels", str(other), "--provider", "none",
                 "--no-progress", "--run-out", str(out), "--out", str(report)]) == 0
    assert json.loads(report.read_text())["reports"][0]["runs"][0]["metrics"]["n_queries"] == 2
    run = read_run(out)
    assert run["q1"][0][0] == "d1" and run["q2"][0][0] == "d/2"  # BEIR ids, not paths
    assert score_run(run, read_qrels(other))["q2"]["success@1"] == 1.0


def test_compare_profile_reports_intervals_and_p_values(demo_ws: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    assert main(["eval", "--queries", "demo", "--provider", "none", "--compare-profile",
                 "reference", "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    sig = out["significance"]
    assert sig["a"] == "reference" and sig["b"] == "default" and sig["n_queries"] == 27
    ndcg = sig["metrics"]["ndcg@10"]
    a, b = (r["runs"][0]["metrics"]["chunk"]["ndcg@10"] for r in reversed(out["reports"]))
    assert ndcg["a"] == pytest.approx(a) and ndcg["b"] == pytest.approx(b)
    assert ndcg["ci"][0] <= ndcg["delta"] <= ndcg["ci"][1] and 0 < ndcg["p_value"] <= 1
