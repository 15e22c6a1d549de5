"""``memory-core eval compare`` on two TREC files names each run once, as A (the first, the
baseline) and B, shows the queries' text and says what the runs were scored against (issue #35:
"b.trec (a) vs a.trec (b)", an empty query column, nDCG unlike `eval`'s without a word)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memory_core.cli import main

FIX = Path(__file__).resolve().parent / "trec_fixture"


def test_trec_compare_names_runs_and_shows_queries(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(FIX / "run_a.trec", tmp_path / "b.trec")  # named against their places
    shutil.copy(FIX / "run_b.trec", tmp_path / "a.trec")
    shutil.copy(FIX / "qrels.txt", tmp_path / "qrels.txt")
    qids = sorted({ln.split()[0] for ln in (FIX / "qrels.txt").read_text().splitlines()
                   if ln.strip()})
    (tmp_path / "queries.jsonl").write_text("".join(
        json.dumps({"id": q, "query": f"text of {q}", "relevant": []}) + "\n" for q in qids))
    code = main(["eval", "compare", str(tmp_path / "b.trec"), str(tmp_path / "a.trec"),
                 "--qrels", str(tmp_path / "qrels.txt"), "--rounds", "200"])
    out = capsys.readouterr().out
    assert code == 0
    assert "A (baseline) = b.trec · B (change) = a.trec" in out
    assert "(a) vs" not in out
    assert "text of q2" in out  # the query column is filled from queries.jsonl
    assert "Scored against the qrels" in out and "evidence lines" in out


def test_cli_progress_off_a_terminal_reports_every_couple_of_seconds(
        capsys: pytest.CaptureFixture[str]) -> None:
    import time

    from memory_core.cli.common import _summary_progress

    progress = _summary_progress()
    progress("embed", 0, 100)
    time.sleep(2.1)
    progress("embed", 40, 100)
    err = capsys.readouterr().err
    assert "embed: 40/100 (2 s so far)" in err
