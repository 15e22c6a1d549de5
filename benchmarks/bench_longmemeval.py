"""LongMemEval-S in the lab: the whole evaluation's wall and CPU time, and its figures.

    MEMORY_WORKBENCH_DATASETS=/work/shared/datasets \\
        .venv/bin/python benchmarks/bench_longmemeval.py --n 30 [--variant user|all] \\
        [--executor serial|ray] [--fresh] [--out /tmp/lme.json]

One index per question (its own haystack), the default profile with the local model, two
configurations fused from one candidate fetch per question: the *ranked list* (no gate, 50
results: the figure peers publish) and *what an agent receives* (the default settings: at most
6 hits, abstention on). Prints LongMemEval's session-level metrics (the benchmark's own
mapping, :func:`memory_core.evaluation.metrics.session_metrics`), chunk Success@k, the
abstention questions' empty rate, and the cost: wall and CPU seconds (this process and its
children), per question, chunks indexed, and the share of chunks whose embedding was already in
the shared cache (haystacks share sessions across questions). ``--n`` takes a subset stratified
by question type; on a busy 2-core machine the full 249 is extrapolated from it (said so).
Indexes already built are reused (a second run costs the queries only); ``--fresh`` rebuilds
them, which is what the cost figures (and the baseline printed beside them) measure.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memory_core.evaluation.datasets import cache_dir, load_query_set
from memory_core.evaluation.longmemeval import lme_configs
from memory_core.evaluation.metrics import SESSION_KS
from memory_core.evaluation.runner import run_eval

#: The first measurement (session 8, --n 30, user variant, load average 14-18 on 2 cores).
BASELINE: dict[str, float] = {"cpu_s_per_question": 14.64, "wall_s_per_question": 75.56,
                              "ranked recall_any@5": 1.0, "ranked recall_all@5": 0.92,
                              "agent chunk_success@5": 1.0, "abstention empty rate": 0.0}


def _cpu() -> float:
    me, ch = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime


def reuse_share(report: Any) -> dict[str, Any]:
    """How many of the indexed chunks have a text another question's index also holds: what
    an embedding cache shared across questions (keyed by content) could skip."""
    seen: dict[str, int] = {}
    total = 0
    for info in report.info["indexes"].values():
        with sqlite3.connect(f"file:{info['store']}?mode=ro", uri=True) as db:
            hashes = {h for (h,) in db.execute("SELECT hash FROM chunks")}
        total += len(hashes)
        for h in hashes:
            seen[h] = seen.get(h, 0) + 1
    return {"chunks": total, "distinct": len(seen),
            "reusable_share": round(1 - len(seen) / total, 4) if total else 0.0}


def summarise(report: Any) -> dict[str, Any]:
    """The figures of each run: session metrics (main set), Success@k, empty rates."""
    out: dict[str, Any] = {}
    for run in report.runs:
        m = run.metrics
        row = {"n_answerable": m["n_queries"],
               **{k: round(v, 6) for k, v in m.get("session", {}).items()},
               **{f"chunk_success@{k}": round(m["chunk"][f"success@{k}"], 6)
                  for k in (1, 3, 5, 10)},
               "zero_rate_answerable": round(m["zero_result_rate"], 6)}
        if "apart" in m:
            row["n_abstention"] = m["apart"]["n_queries"]
            row["empty_rate_abstention"] = round(m["apart"]["zero_result_rate"], 6)
        row["by_type"] = {c: {"n": b["n_queries"],
                              "recall_any@5": round(b.get("session", {}).get("recall_any@5",
                                                                             0.0), 6),
                              "recall_all@5": round(b.get("session", {}).get("recall_all@5",
                                                                             0.0), 6),
                              "chunk_success@5": round(b["chunk"]["success@5"], 6)}
                          for c, b in m["by_category"].items()}
        out[run.label] = row
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=30, help="questions (stratified; 0 = all 249)")
    ap.add_argument("--variant", choices=["user", "all"], default="user")
    ap.add_argument("--executor", choices=["serial", "ray"], default="serial")
    ap.add_argument("--fresh", action="store_true", help="delete this subset's indexes first")
    ap.add_argument("--out", help="write the JSON figures here")
    args = ap.parse_args()
    name = "longmemeval-s" + ("-all" if args.variant == "all" else "") + (
        f"#{args.n}" if args.n else "")
    t0, c0 = time.perf_counter(), _cpu()
    qs = load_query_set(name)
    t_load = time.perf_counter() - t0
    if args.fresh:
        for d in {p for p in qs.store_dirs.values() if p is not None}:
            shutil.rmtree(d, ignore_errors=True)
    if args.executor == "ray":
        from memory_core.evaluation.ray_executor import run_eval_ray
        report = run_eval_ray(None, qs, lme_configs(), audit=False)
    else:
        report = run_eval(None, qs, lme_configs(), audit=False)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    n_ws = len(qs.workspaces)
    chunks = sum(int(i.get("chunks") or 0) for i in report.info["indexes"].values())
    res = {"query_set": report.query_set, "variant": args.variant, "questions": n_ws,
           "skipped": qs.skipped, "executor": args.executor, "wall_s": round(wall, 1),
           "cpu_s": round(cpu, 1), "load_s": round(t_load, 1),
           "wall_s_per_question": round(wall / max(n_ws, 1), 2),
           "cpu_s_per_question": round(cpu / max(n_ws, 1), 2), "chunks": chunks,
           "extrapolated_249_wall_min": round(wall / max(n_ws, 1) * 249 / 60, 1),
           "embedding_reuse": reuse_share(report), "runs": summarise(report),
           "cache": str(cache_dir())}
    text = json.dumps(res, indent=1)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    ranked, agent = list(res["runs"].values())
    now = {"cpu_s_per_question": res["cpu_s_per_question"],
           "wall_s_per_question": res["wall_s_per_question"],
           "ranked recall_any@5": ranked.get("recall_any@5", 0.0),
           "ranked recall_all@5": ranked.get("recall_all@5", 0.0),
           "agent chunk_success@5": agent["chunk_success@5"],
           "abstention empty rate": agent.get("empty_rate_abstention", 0.0)}
    print(f"{'figure':<26}{'now':>10}{'baseline':>10}  (session metrics at "
          f"{', '.join(f'@{k}' for k in SESSION_KS)} in the JSON)", file=sys.stderr)
    for k, v in now.items():
        print(f"{k:<26}{v:>10.3f}{BASELINE[k]:>10.3f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
