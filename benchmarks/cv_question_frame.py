"""Choose issue #36's question-side levers by cross-validation on LongMemEval-S's dev half.

``read.query.DROP_QUESTION_FRAME``: the OR keyword query leaves the question's frame out ("how
many", "what was the name of", "any tips", "days ago": ``QUESTION_FRAME``), a fetch-time
change: the candidates are fetched anew under each value, never read from the cache. (Session
11 also measured a bonus for the best chunk of each event a multi-aspect question names, a
fusion step, in this script's first version, commit beaaf9a: no question moved; removed.)

For each value it prints the ranked list's (gate off, 50) session ``recall_any@5`` /
``recall_all@5`` and the agent's view (answerable chunk Success@5, abstention questions
answered empty), then 5 seeded folds: the value with the best score on four folds,
``recall_any@5 + recall_all@5 + agent Success@5 + abstention emptied`` summed over their
questions (ties: off), is scored on the fifth. Questions: those whose
index is already built in the evaluation cache, of the stratified ``--n`` and of any further
``--set`` (another LongMemEval JSON, e.g. a dev-half subset written outside the project).

    MEMORY_WORKBENCH_DATASETS=../shared/datasets \\
        .venv/bin/python benchmarks/cv_question_frame.py --n 100
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.base.config import profile_settings
from memory_core.evaluation.datasets import QuerySet, load_query_set
from memory_core.evaluation.longmemeval import RANKED_OFF, lme_configs
from memory_core.evaluation.runner import CollectedQuery, EvalConfig, collect, evaluate_rows
from memory_core.read import query

COMBOS: tuple[bool, ...] = (False, True)
NONE = False
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


def rows(col: list[CollectedQuery]) -> dict[str, Row]:
    base = profile_settings("default", "local")
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
    sets = [built(n) for n in [f"longmemeval-s#{a.n}", *a.set]]
    cfgs = lme_configs("default", "local")
    per: dict[bool, dict[str, Row]] = {c: {} for c in COMBOS}
    chosen = query.DROP_QUESTION_FRAME
    for frame in COMBOS:
        query.DROP_QUESTION_FRAME = frame
        for qs in sets:
            per[frame].update(rows(collect(qs, cfgs, provider="local", cache=False)[0]))
    query.DROP_QUESTION_FRAME = chosen
    for c in COMBOS:
        ans = [r for r in per[c].values() if not r[0]]
        ab = [r for r in per[c].values() if r[0]]
        print(f"frame {'on ' if c else 'off'}: answerable {len(ans)} "
              f"recall_any@5 {_mean(ans, 1):.3f} recall_all@5 {_mean(ans, 2):.3f} agent "
              f"Success@5 {_mean(ans, 3):.3f} | abstention empty {sum(r[4] for r in ab)} of "
              f"{len(ab)}")
    held_out(per, a.folds)
    return 0


def _mean(rs: list[Row], i: int) -> float:
    return sum(float(r[i]) for r in rs) / max(1, len(rs))


def held_out(per: dict[bool, dict[str, Row]], k: int) -> None:
    """Each fold scored under the value the other folds chose."""
    qids = sorted(per[NONE])
    random.Random(36).shuffle(qids)
    folds = [qids[i::k] for i in range(k)]
    got: dict[str, Any] = {"any": 0.0, "all": 0.0, "agent": 0.0, "empty": 0, "base_all": 0.0,
                           "base_any": 0.0, "base_agent": 0.0, "base_empty": 0}
    for i, fold in enumerate(folds):
        train = [q for j, fo in enumerate(folds) if j != i for q in fo]
        best = max(COMBOS, key=lambda c: (sum(value(per[c][q]) for q in train), -int(c)))
        for q in fold:
            r, b = per[best][q], per[NONE][q]
            if r[0]:
                got["empty"] += r[4]
                got["base_empty"] += b[4]
            else:
                for key, j in (("any", 1), ("all", 2), ("agent", 3)):
                    got[key] += r[j]
                    got[f"base_{key}"] += b[j]
        print(f"fold {i + 1}: chose frame {'on' if best else 'off'}")
    n = sum(1 for q in qids if not per[NONE][q][0])
    print(f"held out, {n} answerable: recall_any@5 {got['base_any'] / n:.3f} -> "
          f"{got['any'] / n:.3f}, recall_all@5 {got['base_all'] / n:.3f} -> {got['all'] / n:.3f}"
          f", agent Success@5 {got['base_agent'] / n:.3f} -> {got['agent'] / n:.3f}; "
          f"abstention empty {got['base_empty']} -> {got['empty']} of {len(qids) - n}")


if __name__ == "__main__":
    raise SystemExit(main())
