"""The evaluation's low cases (issue #33, item 7): hostile run, qrels, topics and run files
are one clear line or the right answer, never a traceback or a silent wrong figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.evaluation import run_compare as cm
from memory_core.evaluation.datasets import load_query_set
from memory_core.evaluation.runs import list_runs, load_run
from memory_core.evaluation.trec import (
    FormatError,
    evidence_of,
    path_id,
    read_qrels,
    read_run,
    read_topics,
)


@pytest.mark.parametrize("grade", ["inf", "nan", "-inf", "1e999", "1.5"])
def test_qrels_relevance_that_is_no_grade_is_one_line(tmp_path: Path, grade: str) -> None:
    q = tmp_path / "qrels.txt"
    q.write_text(f"1 0 a.md {grade}\n")
    with pytest.raises(FormatError, match=r"qrels.txt:1: relevance"):
        read_qrels(q)


def test_graded_qrels_keep_their_grades(tmp_path: Path) -> None:
    q = tmp_path / "qrels.txt"
    q.write_text("1 0 a.md 2\n1 0 b.md 1.0\n1 0 c.md 0\n")
    assert read_qrels(q) == {"1": {"a.md": 2, "b.md": 1, "c.md": 0}}


def test_a_bom_in_a_beir_tsv_is_not_part_of_the_header(tmp_path: Path) -> None:
    q = tmp_path / "test.tsv"
    q.write_bytes("\ufeffquery-id\tcorpus-id\tscore\nq1\tdoc1\t1\n".encode())
    assert read_qrels(q) == {"q1": {"doc1": 1}}


def test_unicode_line_separators_do_not_split_lines(tmp_path: Path) -> None:
    topics = tmp_path / "queries.jsonl"
    topics.write_text(json.dumps({"qid": "1", "query": "a\u2028b"}, ensure_ascii=False) + "\n"
                      + json.dumps({"qid": "2", "query": "c\x85d"}, ensure_ascii=False) + "\n")
    assert read_topics(topics) == {"1": "a\u2028b", "2": "c\x85d"}
    run = tmp_path / "run.trec"
    run.write_text("1 Q0 a\u2028b.md 1 1.0 t\n1 Q0 c.md 2 0.5 t\n")
    assert read_run(run) == {"1": [("a\u2028b.md", 1.0), ("c.md", 0.5)]}


@pytest.mark.parametrize("name", ["my\u00a0notes.md", "会议\u3000记录.md", "a b.md", "100%.md"])
def test_odd_spaces_in_file_names_round_trip_through_a_run(name: str) -> None:
    docid = path_id(f"memory/{name}")
    assert not any(c.isspace() for c in docid)
    assert evidence_of(docid).path == f"memory/{name}"
    assert evidence_of(f"{docid}#L3").path == f"memory/{name}"


@pytest.mark.parametrize("line", ["1e999", "2.5", '"x"', "0"])
def test_a_query_files_line_that_is_no_line_number_is_one_line(tmp_path: Path,
                                                                line: str) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text('{"qid": "1", "query": "boiler", "relevant": '
                 f'[{{"path": "MEMORY.md", "line": {line}}}]}}\n')
    with pytest.raises(ValueError, match=r"relevant line .* is not a line number"):
        load_query_set(str(f), workspace=tmp_path)


def _run_folder(root: Path, name: str, meta: object) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(meta))
    return d


@pytest.mark.parametrize("meta", [
    {"per_query": "not rows"},
    {"per_query": [{"qid": "1"}]},
    {"per_query": [{"qid": "1", "metrics": {"chunk": 3}}]},
    {"per_query": [{"qid": "1", "metrics": {"file": []}}]},
    {"per_query": [], "metrics": []},
    {"per_query": [{"qid": "1", "metrics": {}, "results": 7}]},
])
def test_a_damaged_saved_run_is_one_line_and_left_out_of_the_list(tmp_path: Path,
                                                                   meta: object) -> None:
    _run_folder(tmp_path, "bad", meta)
    with pytest.raises(ValueError, match="damaged run file"):
        load_run("bad", tmp_path)
    assert list_runs(tmp_path) == []


def test_qrels_that_match_nothing_are_not_no_difference() -> None:
    a = {"1": [("x.md", 1.0)]}
    b = {"1": [("y.md", 1.0)]}
    with pytest.raises(ValueError, match="none of the runs' queries"):
        cm.compare_runs(a, b, {"9": {"x.md": 1}})
    with pytest.raises(ValueError, match="none of the runs' documents"):
        cm.compare_runs(a, b, {"1": {"z.md": 1}})
    res = cm.compare_runs(a, b, {"1": {"x.md": 1}})  # a real difference is still measured
    assert res is not None


def test_an_unknown_metric_is_refused(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = tmp_path / "a.trec"
    run.write_text("1 Q0 x.md 1 1.0 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 x.md 1\n")
    out = subprocess.run([sys.executable, "-m", "memory_core", "eval", "compare", str(run),
                          str(run), "--qrels", str(qrels), "--metric", "ndgc@10"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--metric ndgc@10" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_label_import_that_is_refused_leaves_both_files_as_they_were(tmp_path: Path) -> None:
    from memory_core.evaluation.labels import LabelStore

    store = LabelStore(tmp_path / "labels")
    store.mark("boiler service", "MEMORY.md#L3", True)
    before = (store.queries_file.read_bytes(), store.qrels_file.read_bytes())
    bad = tmp_path / "import.jsonl"
    bad.write_text('{"qid": "a b", "query": "spaced id", '
                   '"relevant": [{"path": "MEMORY.md", "line": 2}]}\n')
    with pytest.raises(ValueError, match="query id"):
        store.import_files(bad)
    assert (store.queries_file.read_bytes(), store.qrels_file.read_bytes()) == before


def test_a_label_import_keeps_the_grades_of_its_qrels(tmp_path: Path) -> None:
    from memory_core.evaluation.labels import LabelStore

    topics = tmp_path / "topics.tsv"
    topics.write_text("q1\tboiler service\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 MEMORY.md#L3 2\nq1 0 MEMORY.md#L5 1\nq1 0 notes.md 0\n")
    store = LabelStore(tmp_path / "labels")
    assert store.import_files(topics, qrels) == 1
    assert store.qrels()["q1"] == {"MEMORY.md#L3": 2, "MEMORY.md#L5": 1, "notes.md": 0}


@pytest.mark.parametrize("root", ["/var/tmp", "/tmp"])
def test_system_temp_roots_are_no_workspace(root: str) -> None:
    from memory_core.openclaw.home import unsafe_workspace

    if not Path(root).is_dir():
        pytest.skip(f"no {root} here")
    assert unsafe_workspace(Path(root)) is not None
    assert unsafe_workspace(Path(root) / "my-agent") is None  # a folder inside one is fine
