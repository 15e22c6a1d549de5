"""Choose issue #36's question-side levers by cross-validation on LongMemEval-S's dev half.

Two levers, each on or off (four combinations). The question frame changes the fetch, so the
candidates are fetched anew under each of its values, never read from the cache; the question's
own date changes only fusion, so both date values are scored from the same candidates:

* ``drop_question_frame`` (a setting): the OR keyword query leaves the question's frame out
  ("how many", "what was the name of", "any tips", "days ago": ``read.query.QUESTION_FRAME``);
* relative dates: each question asked on its own ``question_date`` (``EvalQuery.now_ms``), so
  the date hint reads "four weeks ago" and "last Saturday" (``read.query.relative_spans``);
  off, the question is asked today, years after its haystack, and names no day in it.

(Session 11 also measured a bonus for the best chunk of each event a multi-aspect question
names, a fusion step, in this script's first version, commit beaaf9a: no question moved.)

For each combination it prints the ranked list's (gate off, 50) session ``recall_any@5`` /
``recall_all@5`` and the agent's view (answerable chunk Success@5, abstention questions
answered empty), then 5 seeded folds: the combination with the best score on four folds,
``recall_any@5 + recall_all@5 + agent Success@5 + abstention emptied`` summed over their
questions (ties: fewer levers), is scored on the fifth. Questions: those whose
index is already built in the evaluation cache, of the stratified ``--n`` (0: all) and of any
further ``--set`` (another LongMemEval JSON, e.g. a dev-half subset written outside the project).

    MEMORY_WORKBENCH_DATASETS=../shared/datasets \\
        .venv/bin/python benchmarks/cv_question_side.py --n 100
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.base.config import SearchSettings, profile_settings
from memory_core.evaluation.datasets import QuerySet, load_query_set
from memory_core.evaluation.longmemeval import RANKED_OFF, lme_configs
from memory_core.evaluation.runner import CollectedQuery, EvalConfig, collect, evaluate_rows

#: (question frame dropped, relative dates from the asked day)
Combo = tuple[bool, bool]
COMBOS: tuple[Combo, ...] = ((False, False), (True, False), (False, True), (True, True))
NONE: Combo = (False, False)
#: per question: (abstention?, recall_any@5, recall_all@5, agent Success@5, agent empty)
Row = tuple[bool, float, float, float, bool]


def built(name: str) -> QuerySet:
    """``name``'s questions whose index is complete (a store folder with a sibling built after
    it: the newest may still be building)."""
    qs = load_query_set(name)
    done: set[Path] = set()
    for root in {d.parent for d in qs.store_dirs.values() if d is not None}:
        if root.is_dir():
            dirs = sorted((d for d in root.iterdir() if d.is_dir()),
                          key=lambda d: d.stat().st_mtime)
            done.update(dirs[:-1])
    return replace(qs, queries=[q for q in qs.queries if qs.store_dirs.get(q.workspace) in done])


def undated(col: list[CollectedQuery]) -> list[CollectedQuery]:
    """The same candidates, each question asked today: none carries its own date."""
    return [replace(c, query=replace(c.query, now_ms=None)) for c in col]


def framed(configs: list[EvalConfig], frame: bool) -> list[EvalConfig]:
    return [replace(c, settings=replace(c.settings, drop_question_frame=frame)) for c in configs]


def rows(col: list[CollectedQuery], frame: bool) -> dict[str, Row]:
    return scored_rows(col, replace(profile_settings("default", "local"),
                                    drop_question_frame=frame))


def scored_rows(col: list[CollectedQuery], base: SearchSettings) -> dict[str, Row]:
    """Every question's :data:`Row` under ``base``: the ranked list (``base`` with every gate
    off, 50 results) and the agent's view (``base`` itself). ``cv_block_rescore.py`` scores its
    grid with it too."""
    ranked = evaluate_rows(col, EvalConfig("ranked", replace(base, **RANKED_OFF)))
    agent = evaluate_rows(col, EvalConfig("agent", base))
    out: dict[str, Row] = {}
    for r, a in zip(ranked, agent, strict=True):
        s = r["metrics"].get("session", {})
        out[r["qid"]] = (bool(r["apart"]), s.get("recall_any@5", 0.0), s.get("recall_all@5", 0.0),
                         a["metrics"]["chunk"]["success@5"], a["metrics"]["n_results"] == 0)
    return out


def value(r: Row) -> float:
    return float(r[4]) if r[0] else r[1] + r[2] + r[3]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="the stratified subset's size")
    ap.add_argument("--set", action="append", default=[], help="a further longmemeval-s name")
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args()
    first = f"longmemeval-s#{a.n}" if a.n else "longmemeval-s"
    sets = [built(n) for n in [first, *a.set]]
    per: dict[Combo, dict[str, Row]] = {c: {} for c in COMBOS}
    for frame in (False, True):
        cfgs = framed(lme_configs("default", "local"), frame)
        for qs in sets:
            col = collect(qs, cfgs, provider="local", cache=False)[0]
            per[(frame, True)].update(rows(col, frame))
            per[(frame, False)].update(rows(undated(col), frame))
    for c in COMBOS:
        ans = [r for r in per[c].values() if not r[0]]
        ab = [r for r in per[c].values() if r[0]]
        print(f"{_name(c)}: answerable {len(ans)} "
              f"recall_any@5 {_mean(ans, 1):.3f} recall_all@5 {_mean(ans, 2):.3f} agent "
              f"Success@5 {_mean(ans, 3):.3f} | abstention empty {sum(r[4] for r in ab)} of "
              f"{len(ab)}")
    held_out(per, a.folds)
    return 0


def _mean(rs: list[Row], i: int) -> float:
    return sum(float(r[i]) for r in rs) / max(1, len(rs))


def _name(c: Combo) -> str:
    return f"frame {'dropped' if c[0] else 'kept   '}, relative dates {'on ' if c[1] else 'off'}"


def held_out(per: dict[Combo, dict[str, Row]], k: int) -> None:
    """Each fold scored under the value the other folds chose."""
    qids = sorted(per[NONE])
    random.Random(36).shuffle(qids)
    folds = [qids[i::k] for i in range(k)]
    got: dict[str, Any] = {"any": 0.0, "all": 0.0, "agent": 0.0, "empty": 0, "base_all": 0.0,
                           "base_any": 0.0, "base_agent": 0.0, "base_empty": 0}
    for i, fold in enumerate(folds):
        train = [q for j, fo in enumerate(folds) if j != i for q in fo]
        best = max(COMBOS, key=lambda c: (sum(value(per[c][q]) for q in train), -sum(c)))
        for q in fold:
            r, b = per[best][q], per[NONE][q]
            if r[0]:
                got["empty"] += r[4]
                got["base_empty"] += b[4]
            else:
                for key, j in (("any", 1), ("all", 2), ("agent", 3)):
                    got[key] += r[j]
                    got[f"base_{key}"] += b[j]
        print(f"fold {i + 1}: chose {_name(best)}")
    n = sum(1 for q in qids if not per[NONE][q][0])
    print(f"held out, {n} answerable: recall_any@5 {got['base_any'] / n:.3f} -> "
          f"{got['any'] / n:.3f}, recall_all@5 {got['base_all'] / n:.3f} -> {got['all'] / n:.3f}"
          f", agent Success@5 {got['base_agent'] / n:.3f} -> {got['agent'] / n:.3f}; "
          f"abstention empty {got['base_empty']} -> {got['empty']} of {len(qids) - n}")


if __name__ == "__main__":
    raise SystemExit(main())
