"""Cross-validation (``memory-core eval --cv``, issue #14): folds, held-out figures, the
candidate cache and the CLI. Engine runs use the bundled demo (its own index); the LoCoMo run is
a long evaluation (``longeval``) and skips where ``../shared/datasets`` is absent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_core.base.config import profile_settings
from memory_core.cli import main
from memory_core.evaluation import (
    EvalConfig,
    available_query_sets,
    collect,
    cross_validate,
    cross_validate_sets,
    make_folds,
    run_cv,
    run_eval,
)

GRID = {"vector_weight": [0.3, 0.4, 0.5], "date_hint": [0.0, 0.2]}


@pytest.fixture(scope="module")
def demo_collected() -> list:
    base = profile_settings("default")
    collected, _ = collect("demo", [EvalConfig("default", base)])
    return collected


def test_folds_are_a_stable_partition(demo_collected: list) -> None:
    folds = make_folds(demo_collected, 5)
    assert len(folds) == 5
    seen = [i for f in folds for i in f.test]
    assert sorted(seen) == list(range(len(demo_collected)))
    assert make_folds(demo_collected, 5) == folds  # the same split every run


def test_one_fold_per_workspace(demo_collected: list) -> None:
    from dataclasses import replace

    relabelled = [replace(c, query=replace(c.query, workspace=f"conv-{i % 3}"))
                  for i, c in enumerate(demo_collected)]
    folds = make_folds(relabelled, 5)
    assert [f.name for f in folds] == ["conv-0", "conv-1", "conv-2"]
    assert all(relabelled[i].query.workspace == f.name for f in folds for i in f.test)


def test_held_out_figures_score_each_query_once(demo_collected: list) -> None:
    base = profile_settings("default")
    res = cross_validate(demo_collected, base, GRID, baselines={"default": base})
    n_main = sum(1 for c in demo_collected if not c.query.apart)
    assert res.n_queries == n_main
    assert sum(f["n"] for f in res.folds) == n_main
    for f in res.folds:
        assert f["chosen"]["vector_weight"] in GRID["vector_weight"]
        assert 0.0 <= f["held_out"]["success@5"] <= 1.0
    # The fixed baseline's pooled figure is what run_eval measures for the same settings.
    rep = run_eval(None, "demo", {"default": base})
    assert res.baselines["default"]["pooled"]["success@5"] == pytest.approx(
        rep.metrics["chunk"]["success@5"])
    names = [a["constant"] for a in res.ablation]
    assert names == ["vector_weight", "date_hint"]
    assert "Cross-validation of" in res.to_markdown()


def test_held_out_never_beats_the_best_in_sample_choice(demo_collected: list) -> None:
    """Choosing on the test fold itself can only do better: held-out ≤ in-sample optimum."""
    base = profile_settings("default")
    res = cross_validate(demo_collected, base, GRID, ablate=False)
    assert res.pooled["success@5"] + res.pooled["recall@5"] <= (
        res.in_sample["success@5"] + res.in_sample["recall@5"] + 1e-9)


def test_joint_cv_of_one_set_is_the_single_set_cv(demo_collected: list) -> None:
    base = profile_settings("default")
    one = cross_validate(demo_collected, base, GRID, ablate=False)
    joint = cross_validate_sets({"demo": demo_collected}, base, GRID, ablate=False)
    assert joint.sets["demo"].pooled == pytest.approx(one.pooled)
    assert joint.chosen == [f["chosen"] for f in one.folds]


def test_candidate_cache_gives_the_same_candidates(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path))
    cfg = [EvalConfig("default", profile_settings("default"))]
    first, _ = collect("demo", cfg, cache=True)
    files = list((tmp_path / "eval" / "candidates").glob("*.pickle"))
    assert len(files) == 1
    second, _ = collect("demo", cfg, cache=True)
    assert [c.query for c in second] == [c.query for c in first]
    key = next(iter(first[0].cands))
    assert [c.cands[key].keyword for c in second] == [c.cands[key].keyword for c in first]
    assert [c.cands[key].vector for c in second] == [c.cands[key].vector for c in first]
    files[0].write_bytes(b"not a pickle")  # a damaged cache file is fetched again
    third, _ = collect("demo", cfg, cache=True)
    assert [c.cands[key].keyword for c in third] == [c.cands[key].keyword for c in first]


def test_cli_cv_prints_held_out_figures(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "--queries", "demo", "--cv", "--grid", "vector_weight=0.3,0.4",
                 "--no-progress", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)["cv"]
    assert out["n_queries"] > 0 and len(out["folds"]) == 5
    assert set(out["held_out"]) >= {"success@5", "recall@5"}
    assert out["chosen_on_all"]["vector_weight"] in (0.3, 0.4)


def test_cli_cv_bad_objective_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["eval", "--queries", "demo", "--cv", "--grid", "vector_weight=0.4",
                 "--objective", "nonsense@5", "--no-progress"])
    assert code != 0
    err = capsys.readouterr().err
    assert "nonsense" in err and "Traceback" not in err


@pytest.mark.longeval
def test_locomo_held_out_meets_the_target() -> None:
    if "locomo-markdown:all" not in available_query_sets():
        pytest.skip("../shared/datasets is absent")
    res = run_cv(None, "locomo-markdown:all", profile_settings("default"),
                 {"vector_weight": [0.4, 0.5], "date_hint": [0.0, 0.2]}, ablate=False)
    assert len(res.folds) == 5  # one per conversation
    assert res.pooled["success@5"] >= 0.90
