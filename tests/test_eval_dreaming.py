"""``memory-core eval --dreaming`` (issue 25 item 1) on a LoCoMo-shaped dataset made here.

The real LoCoMo dev replay is run by hand (its table is in docs/promotion.md); this checks the
machinery on three session days with the real engine (keyword-only): the questions are asked
on the days after their evidence, promotion runs at night, and the figures come out.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from memory_core.cli import main

DAYS = ["2023-05-01", "2023-05-02", "2023-05-03", "2023-05-04", "2023-05-05"]


def locomo_like_dataset(tmp_path: Path) -> Path:
    root = tmp_path / "datasets" / "locomo-dev"
    mem = root / "markdown" / "conv-x" / "memory"
    mem.mkdir(parents=True)
    for i, d in enumerate(DAYS):
        body = [f"# Session {i + 1} ({d})", "",
                f"[D{i + 1}:1] Ann: The boat is moored at pier {i + 7} in Kiel harbour.", "",
                f"[D{i + 1}:2] Bob: Noted, pier {i + 7} it is.", ""]
        (mem / f"{d}.md").write_text("\n".join(body), encoding="utf-8")
    qs = [{"qid": "conv-x-q0", "workspace": "conv-x", "query": "where is the boat moored",
           "relevant": [{"path": f"memory/{DAYS[0]}.md", "line": 3}]},
          {"qid": "conv-x-q1", "workspace": "conv-x", "query": "which pier in Kiel harbour",
           "relevant": [{"path": f"memory/{DAYS[1]}.md", "line": 3}]}]
    (root / "queries-markdown.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    return tmp_path / "datasets"


def test_eval_dreaming_reports_both_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(locomo_like_dataset(tmp_path)))
    assert main(["eval", "--dreaming", "--json", "--no-progress"]) == 0
    runs = json.loads(capsys.readouterr().out)["dreaming"]
    assert [r["profile"] for r in runs] == ["reference", "default"]
    for r in runs:
        assert r["asks"] == 6  # each question on the three session days after its evidence
        assert len(r["days"]) == len(DAYS) and r["withinBudget"]
        assert 0 < r["maxStore"] and 0 <= r["savedShare"] <= 1 and 0 <= r["junkShare"] <= 1
        assert r["days"][-1]["ownShare"] > 0  # the questions' recalls are in the store
    # the scratch workspaces are gone
    assert not list(Path(tempfile.gettempdir()).glob("dreaming-conv-x-*"))
    # the table, then each profile's junk bullets, counted as the table counts them
    assert main(["eval", "--dreaming", "--show-junk", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "| profile | asks | saved searches |" in out
    for r in runs:
        assert f"{r['profile']}: {r['junk']} junk bullets" in out
    assert len(runs[0]["junkBullets"]) == runs[0]["junk"]


def test_eval_dreaming_without_the_dataset_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(tmp_path / "absent"))
    assert main(["eval", "--dreaming"]) == 2
    err = capsys.readouterr().err.strip()
    assert "needs LoCoMo dev" in err and len(err.splitlines()) == 1
    monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(locomo_like_dataset(tmp_path)))
    assert main(["eval", "--dreaming", "--conversations", "conv-nope"]) == 2
    assert "unknown conversation 'conv-nope'" in capsys.readouterr().err
