"""TREC runs and qrels, the field's metrics on them, and the paired tests of ``eval compare``.

The fixture in ``tests/trec_fixture`` is worked out by hand below; ``ranx`` (the dev extra) must
give the same figures on it and on the XQuAD en BEIR folder (skipped where ../shared is absent).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from memory_core.cli import main
from memory_core.evaluation import Evidence, datasets_dir, load_query_set
from memory_core.evaluation.run_compare import compare_per_query, compare_runs
from memory_core.evaluation.run_metrics import RUN_METRICS, score_run
from memory_core.evaluation.significance import bootstrap_ci, randomization_p
from memory_core.evaluation.trec import (
    FormatError,
    chunk_docid,
    evidence_of,
    format_run,
    read_qrels,
    read_run,
    read_topics,
    write_run,
)


def mean_metrics(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    """The average of each run metric over the queries (what ranx reports)."""
    n = len(per_query)
    return {m: (sum(float(v[m]) for v in per_query.values()) / n if n else 0.0)
            for m in RUN_METRICS}

FIX = Path(__file__).resolve().parent / "trec_fixture"
L = math.log2
RANX_METRICS = {"ndcg@10": "ndcg@10", "mrr@10": "mrr@10", "recall@5": "recall@5",
                "recall@10": "recall@10", "success@5": "hit_rate@5"}

# Run A: q1 = d9 (judged 0), d1 (rel 1) at 2, d4, d2 (rel 2) at 4; q2 = d3 (rel 1) at 1; q3 absent.
A_Q1_NDCG = (1 / L(3) + 2 / L(5)) / (2 / L(2) + 1 / L(3))
# Run B: q1 = d2, d1 (ideal order: 1.0); q2 = d3 at 4; q3 = d5 at 1.
B_Q2_NDCG = (1 / L(5)) / 1.0


def test_hand_computed_metrics_of_the_fixture() -> None:
    qrels = read_qrels(FIX / "qrels.txt")
    a = score_run(read_run(FIX / "run_a.trec"), qrels)
    b = score_run(read_run(FIX / "run_b.trec"), qrels)
    assert a["q1"]["ndcg@10"] == pytest.approx(A_Q1_NDCG)
    assert a["q1"]["mrr@10"] == 0.5 and a["q1"]["first_rank"] == 2
    assert a["q1"]["recall@5"] == 1.0 and a["q1"]["success@1"] == 0.0
    assert a["q3"] == {"first_rank": None, **dict.fromkeys(a["q3"].keys() - {"first_rank"}, 0.0)}
    assert b["q2"]["ndcg@10"] == pytest.approx(B_Q2_NDCG) and b["q2"]["mrr@10"] == 0.25
    ma, mb = mean_metrics(a), mean_metrics(b)
    assert ma["ndcg@10"] == pytest.approx((A_Q1_NDCG + 1 + 0) / 3)
    assert ma["mrr@10"] == pytest.approx(0.5) and ma["recall@5"] == pytest.approx(2 / 3)
    assert mb["ndcg@10"] == pytest.approx((1 + B_Q2_NDCG + 1) / 3)
    assert mb["mrr@10"] == pytest.approx(0.75) and mb["success@1"] == pytest.approx(2 / 3)


@pytest.mark.longeval  # ranx compiles its numba kernels at first use: ~25 CPU-s in a fresh venv
def test_fixture_metrics_equal_ranx() -> None:
    ranx = pytest.importorskip("ranx")
    qrels = read_qrels(FIX / "qrels.txt")
    for name in ("run_a.trec", "run_b.trec"):
        ours = mean_metrics(score_run(read_run(FIX / name), qrels))
        theirs = ranx.evaluate(ranx.Qrels.from_file(str(FIX / "qrels.txt"), kind="trec"),
                               ranx.Run.from_file(str(FIX / name), kind="trec"),
                               list(RANX_METRICS.values()), make_comparable=True)
        for ours_key, ranx_key in RANX_METRICS.items():
            assert ours[ours_key] == pytest.approx(float(theirs[ranx_key]), abs=1e-4), ours_key


def test_run_files_round_trip_and_ties_keep_our_order(tmp_path: Path) -> None:
    run = {"q1": [("b.md", 0.5), ("a.md", 0.5), ("c.md", 0.7)], "q2": [("x#L1-L4", 1.0)]}
    text = format_run(run, tag="my run")
    scores = [float(line.split()[4]) for line in text.splitlines() if line.startswith("q1")]
    assert scores[0] > scores[1] > scores[2]  # ties and a rise nudged into a strict order
    assert all(line.endswith(" my_run") for line in text.splitlines())
    back = read_run(write_run(tmp_path / "r.trec", run))
    assert [d for d, _ in back["q1"]] == ["b.md", "a.md", "c.md"]
    assert back["q2"] == [("x#L1-L4", 1.0)]
    with pytest.raises(ValueError, match="white space"):
        format_run({"q 1": [("a", 1.0)]})


def test_qrels_trec_and_beir_tsv_read_the_same(tmp_path: Path) -> None:
    (tmp_path / "q.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\n")
    (tmp_path / "q.txt").write_text("q1 0 d1 1\nq1 0 d2 0\n")
    assert read_qrels(tmp_path / "q.tsv") == read_qrels(tmp_path / "q.txt") == \
        {"q1": {"d1": 1, "d2": 0}}


def test_topics_in_four_formats(tmp_path: Path) -> None:
    (tmp_path / "ours.jsonl").write_text('{"qid": "1", "query": "pool size"}\n')
    (tmp_path / "beir.jsonl").write_text('{"_id": "1", "text": "pool size"}\n')
    (tmp_path / "topics.txt").write_text("<top>\n<num> Number: 1\n<title> pool size\n"
                                         "<desc> what the pool holds\n</top>\n")
    (tmp_path / "topics.tsv").write_text("1\tpool size\n")
    for name in ("ours.jsonl", "beir.jsonl", "topics.txt", "topics.tsv"):
        assert read_topics(tmp_path / name) == {"1": "pool size"}, name


def test_docids_name_files_lines_and_chunks() -> None:
    assert evidence_of("memory/a.md").line is None
    assert evidence_of("memory/a.md#L7").line == 7
    assert evidence_of("memory/a.md#L10-L20").line == 15  # the marked chunk's middle line
    # a space would split a TREC line: it is written %20 and read back as a space
    doc = chunk_docid("notes/my file.md", 1, 3)
    assert doc == "notes/my%20file.md#L1-L3" and "my%20file" in format_run({"q": [(doc, 1.0)]})
    assert evidence_of(doc) == Evidence("notes/my file.md", 2)
    assert evidence_of("notes/100%25.md") == Evidence("notes/100%.md")


def test_bad_files_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 d1 1 0.5 tag\nq1 Q0 d2 2 high tag\n")
    with pytest.raises(FormatError, match=r"bad\.trec:2: score 'high'"):
        read_run(bad)
    (tmp_path / "bad.qrels").write_text("q1 d1\n")
    with pytest.raises(FormatError, match=r"bad\.qrels:1: a qrels line has 4 fields"):
        read_qrels(tmp_path / "bad.qrels")
    code = main(["eval", "compare", str(bad), str(FIX / "run_a.trec"), "--qrels",
                 str(FIX / "qrels.txt")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "bad.trec:2" in err
    assert main(["eval", "compare", str(FIX / "run_a.trec"), str(FIX / "run_b.trec")]) == 2
    assert "needs --qrels" in capsys.readouterr().err


# ----------------------------------------------------------------------------- significance


def test_randomization_p_of_three_equal_gains_is_a_quarter() -> None:
    # d = (1, 1, 1): |mean| ≥ 1 only when the three random signs agree: 2 of 8 flips.
    p = randomization_p([0, 0, 0], [1, 1, 1])
    assert p == pytest.approx(0.25, abs=0.015)
    assert randomization_p([0, 0, 0], [1, 1, 1]) == p  # fixed seed: the same figure again
    assert bootstrap_ci([0, 0, 0], [1, 1, 1]) == (1.0, 1.0)


def test_a_run_against_itself_and_the_fixture_compared() -> None:
    qrels = read_qrels(FIX / "qrels.txt")
    run_a, run_b = read_run(FIX / "run_a.trec"), read_run(FIX / "run_b.trec")
    same = compare_runs(run_a, run_a, qrels)
    for v in same.metrics.values():
        assert v["delta"] == 0 and v["p_value"] >= 0.99 and v["ci"] == [0.0, 0.0]
    assert not same.wins() and not same.losses() and not same.regressions
    cmp = compare_runs(run_a, run_b, qrels, threshold=2)
    m = cmp.metrics["mrr@10"]
    assert m["a"] == pytest.approx(0.5) and m["b"] == pytest.approx(0.75)
    assert m["delta"] == pytest.approx(0.25) and m["ci"][0] <= 0.25 <= m["ci"][1]
    assert {r["qid"] for r in cmp.wins("mrr@10")} == {"q1", "q3"}
    assert [r["qid"] for r in cmp.losses("mrr@10")] == ["q2"]
    # q2's first relevant rank fell 1 → 4: more than 2 places
    assert [(r["qid"], r["drop"]) for r in cmp.regressions] == [("q2", 3)]
    assert not compare_runs(run_a, run_b, qrels, threshold=3).regressions


def test_compare_cli_json_has_the_issue_keys(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "compare", str(FIX / "run_a.trec"), str(FIX / "run_b.trec"),
                 "--qrels", str(FIX / "qrels.txt"), "--json", "--rounds", "2000"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["n_queries"] == 3
    for key in ("ndcg@10", "mrr@10", "recall@5", "recall@10", "success@5"):
        assert set(out["metrics"][key]) >= {"a", "b", "delta", "ci", "p_value"}
    assert out["settings"]["rounds"] == 2000 and out["settings"]["seed"] == 42
    assert out["wins"] and out["losses"] == ["q2"]


def test_compare_per_query_needs_shared_queries() -> None:
    with pytest.raises(ValueError, match="share no query"):
        compare_per_query({"a": {"ndcg@10": 1.0}}, {"b": {"ndcg@10": 1.0}}, ["ndcg@10"])


# ----------------------------------------------------------------------------- XQuAD en


@pytest.mark.slow
@pytest.mark.longeval  # two 300-query evaluations (the significance needs them): ~1 min
def test_xquad_runs_read_by_ranx_same_metrics_and_significance(tmp_path: Path) -> None:
    ranx = pytest.importorskip("ranx")
    folder = datasets_dir() / "xquad" / "beir-en"
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip("../shared/datasets/xquad absent")
    qrels_file = folder / "qrels" / "test.tsv"
    runs = {}
    for profile in ("default", "reference"):
        runs[profile] = tmp_path / f"{profile}.trec"
        assert main(["eval", "--queries", "xquad-en", "--profile", profile, "--limit", "300",
                     "--no-progress", "--run-out", str(runs[profile])]) == 0
    qrels = read_qrels(qrels_file)
    qs = load_query_set("xquad-en").limited(300)
    asked = {q.qid for q in qs.queries}
    qrels = {q: d for q, d in qrels.items() if q in asked}
    rq = ranx.Qrels(qrels)
    for profile, path in runs.items():
        theirs = ranx.evaluate(rq, ranx.Run.from_file(str(path), kind="trec"),
                               list(RANX_METRICS.values()), make_comparable=True)
        ours = mean_metrics(score_run(read_run(path), qrels))
        for ours_key in ("ndcg@10", "mrr@10", "recall@5"):
            assert ours[ours_key] == pytest.approx(float(theirs[RANX_METRICS[ours_key]]),
                                                   abs=1e-4), (profile, ours_key)
    cmp = compare_runs(read_run(runs["reference"]), read_run(runs["default"]), qrels)
    assert cmp.n_queries == 300
    assert cmp.metrics["ndcg@10"]["p_value"] < 0.01 and cmp.metrics["recall@5"]["p_value"] < 0.01
    lo, hi = cmp.metrics["ndcg@10"]["ci"]
    assert lo <= cmp.metrics["ndcg@10"]["delta"] <= hi and lo > 0
    same = compare_runs(read_run(runs["default"]), read_run(runs["default"]), qrels)
    assert all(v["delta"] == 0 and v["p_value"] >= 0.99 for v in same.metrics.values())
