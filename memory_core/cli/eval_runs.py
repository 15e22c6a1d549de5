"""``memory-core eval compare`` and ``eval runs``, and ``eval``'s run flags (``--qrels``,
``--run-out``, ``--save-run``): TREC runs out, qrels in, saved runs compared with significance.

Examples::

    memory-core eval --queries xquad-en --run-out /tmp/default.trec --save-run default
    memory-core eval --queries xquad-en --profile reference --run-out /tmp/reference.trec
    memory-core eval compare /tmp/reference.trec /tmp/default.trec \\
        --qrels ../shared/datasets/xquad/beir-en/qrels/test.tsv --json
    memory-core eval runs                      # the saved runs, newest first
    memory-core eval compare RUN_ID_A RUN_ID_B # two saved runs, on their own per-query rows
    memory-core eval --queries my-topics.jsonl --qrels my.qrels --workspace ~/agent
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import CliError

COMPARE_USAGE = ("eval compare RUN_A RUN_B [--qrels FILE] [--json]: two TREC run files (with "
                 "--qrels) or two saved runs (folders or ids)")


def add_run_flags(p: argparse.ArgumentParser) -> None:
    """The flags of ``eval`` that read qrels, write TREC runs and save runs."""
    p.add_argument("--qrels", help="relevance judgements (TREC qrels or BEIR TSV) for the "
                   "--queries file (our JSONL, BEIR queries.jsonl, TREC topics) or BEIR folder; "
                   "with 'eval compare', what the two TREC runs are scored against")
    p.add_argument("--run-out", metavar="FILE", help="write the ranked results as a TREC run "
                   "(qid Q0 docid rank score tag)")
    p.add_argument("--run-level", choices=["file", "chunk"], default="file",
                   help="docids of --run-out / --save-run: the file (a BEIR document's id) or "
                   "the chunk as path#Lstart-Lend (default file)")
    p.add_argument("--save-run", nargs="?", const="", metavar="NAME",
                   help="save the evaluation as a run (TREC file, settings, dataset, index, "
                   "code version, metrics) in the runs folder")
    p.add_argument("--runs-dir", help="the runs folder (default $MEMORY_WORKBENCH_RUNS or "
                   "~/.cache/memory-workbench/runs)")
    p.add_argument("--rounds", type=int, help="with 'eval compare': bootstrap and randomization "
                   "rounds (default 10000)")
    p.add_argument("--seed", type=int, help="with 'eval compare': random seed (default 42)")
    p.add_argument("--threshold", type=int, help="with 'eval compare': flag a query whose first "
                   "relevant rank fell by more than this many places (default 3)")
    p.add_argument("--level", choices=["chunk", "file"], help="with 'eval compare' of saved "
                   "runs: the level of their metrics (default: the query set's)")


def load_with_qrels(args: argparse.Namespace) -> Any:
    """The query set of ``--queries`` judged by ``--qrels``."""
    from ..evaluation.labels import load_beir_labelled, load_labelled

    qpath = Path(args.queries).expanduser()
    if not Path(args.qrels).expanduser().is_file():
        raise CliError(f"--qrels {args.qrels}: no such file")
    if qpath.is_dir() and (qpath / "corpus.jsonl").is_file():
        return load_beir_labelled(qpath, args.qrels)
    if not qpath.is_file():
        raise CliError(f"--queries {args.queries}: with --qrels, a queries file (JSONL, BEIR "
                       "queries.jsonl, TREC topics) or a BEIR folder")
    if not args.workspace:
        raise CliError("--qrels with a queries file needs --workspace")
    return load_labelled(qpath, args.qrels, workspace=args.workspace)


def write_runs(args: argparse.Namespace, report: Any, qs: Any) -> list[str]:
    """``--run-out`` and ``--save-run`` for the evaluated (first) configuration; what was
    written, as lines for stderr."""
    from ..evaluation import runs as rs
    from ..evaluation.trec import write_run

    notes = []
    if args.run_out:
        run = rs.trec_run(report.runs[0], args.run_level, qs.doc_ids)
        path = write_run(args.run_out, run, tag=report.runs[0].label)
        notes.append(f"TREC run ({args.run_level} level, {len(run)} queries): {path}")
    if args.save_run is not None:
        saved = rs.save_run(report, qs, args.save_run or None, level=args.run_level,
                            root=args.runs_dir)
        notes.append(f"saved run {saved.id}: {saved.path}")
    return notes


def run_action(args: argparse.Namespace) -> int:
    """``eval compare …`` or ``eval runs``."""
    action, *rest = args.action
    if action == "runs":
        if rest:
            raise CliError("eval runs takes no argument")
        return _list(args)
    if action == "compare":
        if len(rest) != 2:
            raise CliError(COMPARE_USAGE)
        return _compare(args, rest[0], rest[1])
    raise CliError(f"eval {action}: unknown action (compare, runs; or flags such as --queries)")


def _list(args: argparse.Namespace) -> int:
    from ..evaluation.runs import list_runs, runs_dir

    rows = [r.summary() for r in list_runs(args.runs_dir)]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print(f"No saved runs in {runs_dir(args.runs_dir)}.")
        return 0
    print("| id | query set | label | queries | nDCG@10 | MRR@10 | S@5 | R@5 | code |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        figs = " | ".join(f"{r[k]:.3f}" if isinstance(r[k], float) else "–"
                          for k in ("ndcg@10", "mrr@10", "success@5", "recall@5"))
        print(f"| {r['id']} | {r['query_set']} | {r['label']} | {r['n_queries']} | {figs} | "
              f"{r['code']} |")
    return 0


def _query_texts(args: argparse.Namespace) -> dict[str, str]:
    """The query texts for TREC runs (which carry only ids): ``--queries`` (a set's name or
    file), else a ``queries.jsonl`` beside the qrels (the labels folder's layout)."""
    from ..evaluation.datasets import load_query_set

    src = args.queries
    if not src:
        beside = Path(args.qrels).expanduser().with_name("queries.jsonl")
        src = str(beside) if beside.is_file() else None
    if not src:
        return {}
    try:
        path = Path(src).expanduser()
        if path.is_file() and path.suffix == ".jsonl":  # ours, BEIR's, the labels folder's
            rows = [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines()
                    if ln.strip()]
            return {str(r.get("qid", r.get("_id", r.get("id")))): str(r.get("query",
                    r.get("text", ""))) for r in rows if isinstance(r, dict)}
        return {q.qid: q.query for q in load_query_set(src).queries}
    except Exception:  # texts are a courtesy: the comparison stands without them
        return {}


def _compare(args: argparse.Namespace, a: str, b: str) -> int:
    from ..evaluation import run_compare as cm
    from ..evaluation import runs as rs
    from ..evaluation.trec import read_qrels, read_run

    opts: dict[str, Any] = {k: v for k, v in (("rounds", args.rounds), ("seed", args.seed),
                                              ("threshold", args.threshold)) if v is not None}
    if args.rounds is not None and args.rounds < 1:
        raise CliError("--rounds must be at least 1")
    primary = args.metric or "ndcg@10"  # an unknown one is refused, not read as ndcg@10
    if primary not in cm.RUN_METRICS:
        raise CliError(f"--metric {primary}: not a run metric ({', '.join(cm.RUN_METRICS)})")

    def as_saved(ref: str) -> Any:
        return None if Path(ref).expanduser().is_file() else rs.load_run(ref, args.runs_dir)

    sa, sb = as_saved(a), as_saved(b)
    if args.qrels or sa is None or sb is None:
        if not args.qrels:
            raise CliError("comparing TREC run files needs --qrels FILE")
        qrels = read_qrels(args.qrels)
        if not qrels:
            raise CliError(f"--qrels {args.qrels}: no judgement in it")
        run_a = read_run(sa.trec_file if sa else a)
        run_b = read_run(sb.trec_file if sb else b)
        res = cm.compare_runs(run_a, run_b, qrels, label_a=sa.name if sa else Path(a).name,
                              label_b=sb.name if sb else Path(b).name, primary=primary,
                              queries=_query_texts(args), **opts)
        res.settings["scored_against"] = (
            f"the qrels {args.qrels} (a hit counts when its docid is judged relevant; "
            "`memory-core eval` scores the same hits against the query set's evidence lines "
            "inside a chunk, so its figures can differ)")
    else:
        res = rs.compare_saved(sa, sb, level=args.level, primary=primary, **opts)
    if args.json:
        sys.stdout.write(json.dumps(res.to_dict(), ensure_ascii=False, indent=1) + "\n")
    else:
        sys.stdout.write(res.to_markdown())
    return 0
