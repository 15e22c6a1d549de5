"""Choose ``block_rescore`` (issue #36) by cross-validation on LongMemEval-S's dev half.

The vector leg's first ``block_rescore`` hits are scored by their best block's cosine (a
chunk's paragraphs and turns, embedded at sync: ``write/chunking.chunk_blocks``,
``read/search.best_block``), the chunk's own cosine kept as ``raw`` for the calibration. Each
value in ``--grid`` is its own fetch (the setting changes the candidates), all from the same
indexes; each is scored as ``cv_question_side.py`` scores its levers: the ranked list (gate off,
50: session ``recall_any@5`` / ``recall_all@5``) and the agent's view (answerable chunk
Success@5, abstention questions answered with nothing), then 5 seeded folds in which the value
with the best ``recall_any@5 + recall_all@5 + agent Success@5 + abstention emptied`` on four
folds (ties: the smaller value) is scored on the fifth.

Building the dev half's indexes with block vectors embeds every block of every question
(about four a chunk); the evaluation cache keeps them, so a second run only fetches.

    MEMORY_WORKBENCH_DATASETS=../shared/datasets \\
        .venv/bin/python benchmarks/cv_block_rescore.py --n 0 --grid 0,5,10,20
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cv_question_side import Row, scored_rows, value

from memory_core.base.config import profile_settings
from memory_core.evaluation.datasets import load_query_set
from memory_core.evaluation.longmemeval import lme_configs
from memory_core.evaluation.runner import collect


def summary(rows: dict[str, Row]) -> str:
    ans = [r for r in rows.values() if not r[0]]
    ab = [r for r in rows.values() if r[0]]

    def mean(i: int) -> float:
        return sum(float(r[i]) for r in ans) / max(1, len(ans))

    return (f"{len(ans)} answerable: recall_any@5 {mean(1):.3f} recall_all@5 {mean(2):.3f} "
            f"agent Success@5 {mean(3):.3f}; abstention empty {sum(r[4] for r in ab)} of "
            f"{len(ab)}")


def held_out(per: dict[int, dict[str, Row]], folds: int) -> str:
    """Each fold scored under the value the other folds chose, against ``block_rescore = 0``."""
    grid = sorted(per)
    qids = sorted(per[grid[0]])
    random.Random(36).shuffle(qids)
    parts = [qids[i::folds] for i in range(folds)]
    chosen: dict[str, Row] = {}
    for i, fold in enumerate(parts):
        train = [q for j, p in enumerate(parts) if j != i for q in p]
        best = max(grid, key=lambda t: (sum(value(per[t][q]) for q in train), -t))
        print(f"fold {i + 1}: chose block_rescore {best}", flush=True)
        chosen.update((q, per[best][q]) for q in fold)
    return f"held out: {summary(per[0])} -> {summary(chosen)}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="the stratified subset's size (0: all)")
    ap.add_argument("--grid", default="0,5,10,20", help="block_rescore values (0 included)")
    ap.add_argument("--folds", type=int, default=5)
    a = ap.parse_args()
    grid = sorted({0, *(int(x) for x in a.grid.split(","))})
    qs = load_query_set(f"longmemeval-s#{a.n}" if a.n else "longmemeval-s")
    configs = [replace(c, label=f"{c.label} {t}", settings=replace(c.settings, block_rescore=t))
               for t in grid for c in lme_configs("default", "local")]
    col = collect(qs, configs, provider="local", cache=True)[0]
    per = {t: scored_rows(col, replace(profile_settings("default", "local"), block_rescore=t))
           for t in grid}
    for t in grid:
        print(f"block_rescore {t:3}: {summary(per[t])}", flush=True)
    print(held_out(per, a.folds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
