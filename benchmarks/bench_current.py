"""Memory that is current (issue #34): the newest value first for questions about now, the old
one still found for questions about the past, superseded hits marked, stable facts unharmed.

    python benchmarks/bench_current.py [--workspace DIR --queries FILE --statements FILE]
                                       [--provider local|none] [--cv]

Defaults: the changing-facts dev set (``examples/changing-facts``). The workspace is copied to a
temporary folder and indexed there; each question's candidates are fetched once and fused with
the ``current`` step off (``supersession_penalty`` = ``current_boost`` = 0) and as configured,
so the two columns differ by that step only. Reports, per category (``now``, ``past``,
``stable``, or the queries' own): Success@1/@5; for ``now``, the labelled (current) statement
first; and, with a statements file, the marks: of the returned hits covering a superseded
statement, how many carry ``supersededBy``, and how many hits covering only current statements
carry it (must be 0). ``--cv``: leave-one-fold-out choice of the two constants over a grid.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from memory_core import MemoryIndex
from memory_core.base.config import SearchSettings
from memory_core.read.fusion import Hit, fuse

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "examples" / "changing-facts"
GRID = [(p, b) for p in (0.0, 0.3, 0.5, 0.7, 0.9) for b in (0.0, 0.5, 1.0, 1.5)]


def _covers(h: Hit, path: str, line: int) -> bool:
    return h.path == path and h.start_line <= line <= h.end_line


def evaluate(queries: list[dict[str, Any]], cands: list[Any], s: SearchSettings,
             statements: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of one setting over fetched candidates."""
    by_cat: dict[str, dict[str, float]] = {}
    marked = unmarked = wrong = 0
    for q, c in zip(queries, cands, strict=True):
        hits = fuse(c, s).hits
        gold = [(r["path"], r["line"]) for r in q["relevant"]]
        ranks = [i for i, h in enumerate(hits) if any(_covers(h, p, ln) for p, ln in gold)]
        row = by_cat.setdefault(q["category"], {"n": 0, "s1": 0, "s5": 0})
        row["n"] += 1
        row["s1"] += bool(ranks and ranks[0] == 0)
        row["s5"] += bool(ranks and ranks[0] < 5)
        for h in hits:
            covered = [st for st in statements if _covers(h, st["path"], st["line"])]
            if any(not st["current"] for st in covered):
                if h.superseded_by:
                    marked += 1
                else:
                    unmarked += 1
            elif covered and h.superseded_by:
                wrong += 1
    out: dict[str, Any] = {cat: {"n": int(r["n"]), "success@1": r["s1"] / r["n"],
                                 "success@5": r["s5"] / r["n"]} for cat, r in by_cat.items()}
    out["marks"] = {"superseded_hits": marked + unmarked, "marked": marked, "wrong": wrong}
    return out


def cross_validate(queries: list[dict[str, Any]], cands: list[Any], base: SearchSettings,
                   folds: int = 5) -> list[tuple[float, float]]:
    """Leave-one-fold-out: the (penalty, boost) each fold's training part prefers (mean of
    now Success@1 and past/stable Success@5), in GRID order on ties."""
    chosen = []
    for k in range(folds):
        train = [i for i in range(len(queries)) if i % folds != k]
        qs = [queries[i] for i in train]
        cs = [cands[i] for i in train]

        def objective(pb: tuple[float, float], qs: list[Any] = qs, cs: list[Any] = cs) -> float:
            r = evaluate(qs, cs, replace(base, supersession_penalty=pb[0],
                                         current_boost=pb[1]), [])
            parts = [r[c]["success@1" if c == "now" else "success@5"]
                     for c in r if c != "marks"]
            return sum(parts) / len(parts)
        chosen.append(max(GRID, key=objective))
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workspace", type=Path, default=SET / "workspace")
    ap.add_argument("--queries", type=Path, default=SET / "queries.jsonl")
    ap.add_argument("--statements", type=Path, default=SET / "statements.jsonl")
    ap.add_argument("--provider", default="local")
    ap.add_argument("--cv", action="store_true")
    a = ap.parse_args()
    queries = [json.loads(x) for x in a.queries.read_text(encoding="utf-8").splitlines() if x]
    statements = ([json.loads(x) for x in a.statements.read_text(encoding="utf-8").splitlines()
                   if x] if a.statements and a.statements.exists() else [])
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(a.workspace, ws, ignore=shutil.ignore_patterns(".memory"),
                        copy_function=shutil.copy2)  # keep MEMORY.md's mtime
        with MemoryIndex.open(ws, provider=a.provider) as idx:
            idx.sync()
            base = idx.settings()
            cands = [idx.candidates(q["query"], settings=base) for q in queries]
            print(f"supersessions stored: {len(idx.supersessions())}")
    off = replace(base, supersession_penalty=0.0, current_boost=0.0)
    for label, s in (("off", off), ("on", base)):
        print(label, json.dumps(evaluate(queries, cands, s, statements)))
    if a.cv:
        print("cv choices (penalty, boost) per fold:", cross_validate(queries, cands, base))


if __name__ == "__main__":
    main()
