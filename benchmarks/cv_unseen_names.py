"""Choose the unseen-word constants by cross-validation on LongMemEval-S's dev half (#36).

``UNSEEN_NAME_FACTOR`` multiplies the calibrated probabilities of a query naming something no
chunk holds, ``UNSEEN_WORD_FACTOR`` those of a query with another word no chunk holds (of
``MIN_ABSENT_LEN`` letters or more, when the index holds ``ABSENT_KNOWN_MIN`` of its terms)
(:func:`memory_core.read.calibration.unseen_terms`); they move only the abstention gate. This
prints the curve (abstention questions answered empty, answerable chunk Success@5, the ranked
list's session recall) for each combination, then 5 folds: each is scored on four folds by
"abstention questions emptied − 5 × answerable Success@5 lost" and the best is scored on the
fifth. Questions: those whose index is already built in the evaluation cache (``--built``, what
docs/retrieval.md reports) or a stratified ``--n``.

    MEMORY_WORKBENCH_DATASETS=../shared/datasets \\
        .venv/bin/python benchmarks/cv_unseen_names.py --built
"""

from __future__ import annotations

import argparse
import random
from dataclasses import replace

from memory_core.base.config import profile_settings
from memory_core.evaluation.datasets import load_query_set
from memory_core.evaluation.longmemeval import RANKED_OFF, lme_configs
from memory_core.evaluation.metrics import aggregate
from memory_core.evaluation.runner import EvalConfig, collect, evaluate_rows
from memory_core.read import calibration

#: (name factor, word factor, shortest word, share of known terms): the name factor's curve
#: alone (session 9), then the word factor's grid beside the chosen name factor.
NONE = (1.0, 1.0, 3, 0.7)
COMBOS: tuple[tuple[float, float, int, float], ...] = (
    NONE, *((f, 1.0, 3, 0.7) for f in (0.75, 0.6, 0.5, 0.4, 0.25, 0.0)),
    *((0.5, w, n, k) for w in (0.9, 0.85, 0.8, 0.7, 0.6) for n in (3, 4)
      for k in (0.6, 0.7, 0.8)))
NAMES = ("UNSEEN_NAME_FACTOR", "UNSEEN_WORD_FACTOR", "MIN_ABSENT_LEN", "ABSENT_KNOWN_MIN")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=0, help="a stratified subset of N questions")
    ap.add_argument("--built", action="store_true", help="the questions already indexed")
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args()
    qs = load_query_set("longmemeval-s" + (f"#{a.n}" if a.n else ""))
    if a.built:
        keep = {k for k, d in qs.store_dirs.items() if d is not None and d.is_dir()}
        qs = replace(qs, queries=[q for q in qs.queries if q.workspace in keep])
    col, _ = collect(qs, lme_configs("default", "local"), provider="local", cache=True)
    base = profile_settings("default", "local")
    per: dict[tuple[float, float, int, float], dict[str, tuple[bool, float, bool]]] = {}
    for f in COMBOS:
        for name, value in zip(NAMES, f, strict=True):
            setattr(calibration, name, value)
        rows = evaluate_rows(col, EvalConfig("agent", base))
        m = aggregate(rows)
        r = aggregate(evaluate_rows(col, EvalConfig("ranked", replace(base, **RANKED_OFF))))
        per[f] = {x["qid"]: (x["apart"], x["metrics"]["chunk"]["success@5"],
                             x["metrics"]["n_results"] == 0) for x in rows}
        print(f"{f}: answerable {m['n_queries']} Success@5 {m['chunk']['success@5']:.3f}"
              f" | abstention {m['apart']['n_queries']} empty "
              f"{m['apart']['zero_result_rate']:.3f} | ranked recall_any@5 "
              f"{r['session']['recall_any@5']:.3f} recall_all@5 {r['session']['recall_all@5']:.3f}")
    qids = sorted(per[NONE])
    random.Random(36).shuffle(qids)
    folds = [qids[i::a.folds] for i in range(a.folds)]

    def gain(f: tuple[float, float, int, float], ids: list[str]) -> float:
        return sum(float(per[f][q][2]) if per[f][q][0] else -5 * (per[NONE][q][1] - per[f][q][1])
                   for q in ids)

    emptied = lost = 0.0
    for i, fold in enumerate(folds):
        train = [q for j, fo in enumerate(folds) if j != i for q in fo]
        # ties: the larger factors (the smaller step from no factor at all)
        best = max(COMBOS, key=lambda f: (gain(f, train), f))
        emptied += sum(per[best][q][2] for q in fold if per[best][q][0])
        lost += sum(per[NONE][q][1] - per[best][q][1] for q in fold if not per[best][q][0])
        print(f"fold {i + 1}: chose {best}")
    n_abs = sum(1 for q in qids if per[NONE][q][0])
    print(f"held out: {emptied:.0f} of {n_abs} abstention questions empty, "
          f"{lost:.0f} of {len(qids) - n_abs} answerable questions lost at Success@5")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
