"""``memory-core queries``: the agent's real ``memory_search`` calls, from its transcripts.

``--openclaw-home DIR [--agent ID]`` reads ``<home>/agents/<id>/sessions/`` as OpenClaw lists
it; ``-w W`` a bare workspace's ``sessions/`` folder. Prints one JSON object per call (JSONL):
``{qid, query, at, session, line, args, results_then}``; without ``--json``, a table.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..base.config import PROFILES
from .common import dump_json, open_index, transcripts_of


def cmd_queries(args: argparse.Namespace) -> int:
    from ..openclaw import mine_queries, zero_result_rate

    files = transcripts_of(args)
    queries = mine_queries(files)
    if args.rerun:
        return _rerun(args, queries)
    if args.json:
        for q in queries:
            sys.stdout.write(json.dumps(q.to_dict(), ensure_ascii=False) + "\n")
        return 0
    for q in queries:
        n = "—" if q.results_then is None else str(len(q.results_then))
        print(f"{(q.to_dict()['at'] or '')[:19]:19}  {n:>2} results  {q.query}")
        print(f"{'':19}  {q.session}:{q.line}")
    rate = zero_result_rate(queries)
    summary: dict[str, Any] = {"calls": len(queries), "transcripts": len(files)}
    if rate is not None:
        summary["zeroResultRate"] = round(rate, 3)
    print(", ".join(f"{k} {v}" for k, v in summary.items()), file=sys.stderr)
    return 0


def _rerun(args: argparse.Namespace, queries: list[Any]) -> int:
    """``--rerun``: each call run again on the index; then vs now, label-free metrics."""
    from ..openclaw import compare, metrics
    from ..openclaw.realq import percent as pct

    with open_index(args) as idx:
        s = idx.settings()
        comps = compare(idx, queries, s)
    m = metrics(comps, s.max_results)
    if args.json:
        dump_json({"metrics": m.to_dict(), "queries": [c.to_dict() for c in comps]})
        return 0
    for c in comps:
        ov = "—" if c.overlap is None else f"{c.overlap:.2f}"
        print(f"then {len(c.query.results_then or [])} · now {len(c.now)} · overlap {ov}  "
              f"{c.query.query}")
    print(f"{m.queries} queries: zero-result rate then {pct(m.zero_rate_then)}, now "
          f"{pct(m.zero_rate_now)}; overlap@{m.k} {pct(m.overlap_at_k)}; score spread "
          + ("—" if m.score_spread is None else f"{m.score_spread:.3f}"))
    return 0


def register(subparsers: Any) -> None:
    """Add ``queries`` to the ``memory-core`` parser."""
    p = subparsers.add_parser(
        "queries", help="the agent's real memory_search calls and what they returned")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", "-w", help="a workspace with a sessions/ folder")
    where.add_argument("--openclaw-home", metavar="DIR", help="an OpenClaw home (~/.openclaw)")
    p.add_argument("--agent", metavar="ID", help="the agent (default: the home's default, main)")
    p.add_argument("--json", action="store_true", help="one JSON object per call (JSONL)")
    p.add_argument("--rerun", action="store_true",
                   help="run each call again on the index: what it gets now, zero-result "
                   "rates then and now, overlap@k with what it got then, score spread")
    p.add_argument("--provider", help="with --rerun: embedding provider (none: keyword-only)")
    p.add_argument("--profile", choices=PROFILES,
                   help="with --rerun: ranking profile (an OpenClaw home: reference)")
    p.set_defaults(func=cmd_queries)
