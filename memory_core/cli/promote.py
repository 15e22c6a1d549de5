"""``memory-core promote`` and ``memory-core replay``: promotion from the command line.

``promote`` lists the candidates that pass the gates (each with its score breakdown), explains
one, previews or applies the promotion to ``MEMORY.md``, or undoes the last one. ``replay``
seeds recall signals from a JSONL query log over simulated days, so that a fresh workspace has
something to promote.

The promotion package is imported inside the commands (and when ``promote``'s options are built,
for the gates' defaults in its help), never when another sub-command runs.
"""

from __future__ import annotations

import argparse
import math
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .common import CliError, add_workspace_args, dump_json, open_index, transcripts_of

if TYPE_CHECKING:
    from .. import promotion as pr

def _now(args: argparse.Namespace) -> int | None:
    """``--now`` as epoch ms (an ISO 8601 time; naive means UTC), or ``None`` for the clock."""
    from .. import promotion as pr

    if not getattr(args, "now", None):
        return None
    try:
        ms = pr.now_ms(datetime.fromisoformat(args.now.replace("Z", "+00:00")))
    except ValueError as e:
        raise CliError(f"--now: not an ISO 8601 time: {args.now!r}") from e
    if ms < 0:  # the days before it would fall before year 1
        raise CliError(f"--now: {args.now!r} is before 1970")
    return ms


def _finite(text: str) -> float:
    """A gate's number: ``nan`` or ``inf`` would pass (or gate) everything silently."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expects a finite number (got {text!r})")
    return value


def _gates(args: argparse.Namespace) -> dict[str, Any]:
    return {"min_score": args.min_score, "min_recall_count": args.min_recall_count,
            "min_unique_queries": args.min_unique_queries, "max_age_days": args.max_age_days,
            "limit": args.limit}


def _print_candidate(c: pr.PromotionCandidate, *, verbose: bool = True) -> None:
    from .. import promotion as pr

    mark = "" if c.passed else "  (gated)"
    print(f"#{c.rank} {c.score:.3f} {c.path}:{c.start_line}-{c.end_line}{mark}")
    print(f"    key: {c.key}")
    print(f"    signals {c.signals} (recalls {c.recall_count}, daily {c.daily_count}), "
          f"unique queries {c.unique_queries}, days {len(c.recall_days)}, "
          f"avg {c.avg_score:.3f}, age {c.age_days:.1f} d")
    if verbose:
        parts = "  ".join(f"{k} {c.components[k]:.3f} ({c.raw.get(k, 0):.2f})"
                          for k in (*pr.WEIGHTS, "phaseBoost"))
        print(f"    components: {parts}")
        if c.concept_tags:
            print(f"    tags: {', '.join(c.concept_tags)}")
    if c.reasons:
        print(f"    gated: {'; '.join(c.reasons)}")
    d = c.duplicate
    if d is not None:
        cos = "-" if d.cosine is None else f"{d.cosine:.2f}"
        flag = "LIKELY DUPLICATE of" if d.likely else "closest in MEMORY.md:"
        print(f"    {flag} line {d.line} (cosine {cos}, jaccard {d.jaccard:.2f}, "
              f"coverage {d.coverage:.0%}): {d.text[:100]}")
    print("    " + c.snippet[:300] + ("…" if len(c.snippet) > 300 else ""))


def cmd_promote(args: argparse.Namespace) -> int:
    from .. import promotion as pr

    if sum(bool(x) for x in (args.apply, args.undo, args.explain, args.preview)) > 1:
        raise CliError("choose one of --apply, --preview, --undo, --explain")
    now = _now(args)
    with open_index(args) as idx:
        if args.undo:
            res = pr.undo(idx, force=args.force, now=now)
            if args.json:
                dump_json(res.to_dict())
            else:
                print(res.message)
            return 0 if res.restored else 2
        if args.explain:
            info = pr.explain(idx, args.explain, now=now)
            if args.json:
                dump_json(info)
            else:
                _print_explain(info)
            return 0
        if args.stale:
            return _stale(idx, args, now)
        if args.timezone:
            pr.set_timezone(idx, args.timezone)
        if args.ingest_daily:
            rep = pr.ingest_daily(idx, now=now)
            if not args.json:
                print(f"Daily ingestion: {rep.recorded} signals from {len(rep.files)} files "
                      f"({len(rep.skipped_files)} unchanged today).", file=sys.stderr)
        listing = not (args.apply or args.preview or args.impact)
        dup = "passed" if listing and not args.no_duplicates else "none"
        cands = pr.list_candidates(idx, now=now, include_promoted=args.include_promoted,
                                   check_duplicates_of=dup, **_gates(args))
        passed = [c for c in cands if c.passed]
        if not listing:
            return _apply_or_preview(idx, args, passed, now)
        if args.json:
            out: dict[str, Any] = {"candidates": [c.to_dict() for c in passed],
                                   "gates": _gate_values(args), "now": pr.iso(pr.now_ms(now))}
            if args.all:
                out["gated"] = [c.to_dict() for c in cands if not c.passed]
            dump_json(out)
            return 0
        g = _gate_values(args)
        print(f"{len(passed)} candidate(s) pass the gates (minScore {g['minScore']}, "
              f"minRecallCount {g['minRecallCount']}, minUniqueQueries "
              f"{g['minUniqueQueries']}, maxAgeDays {g['maxAgeDays']}, limit {g['limit']}); "
              f"{len(cands) - len(passed)} gated.")
        for c in (cands if args.all else passed):
            _print_candidate(c)
        if not passed and cands and not args.all:
            best = cands[0]
            print(f"Best gated entry: {best.key} ({best.score:.3f}): {'; '.join(best.reasons)}")
            print("Use --all to list every tracked entry with its reasons.")
        if passed:
            print("Apply with --apply (preview the diff with --preview; undo with --undo).")
    return 0


def _stale(idx: Any, args: argparse.Namespace, now: int | None) -> int:
    """``--stale``: the MEMORY.md lines a later memory line superseded, the newer line beside
    each, and the update's diff; with ``--apply`` the update is written (``--undo`` reverts)."""
    from .. import promotion as pr

    plan = pr.preview_update(idx)
    res = pr.apply_update(idx, plan, now=now) if args.apply and plan.stale else None
    if args.json:
        dump_json({**plan.to_dict(), "applied": res.to_dict() if res else None})
        return 0
    if not plan.stale:
        print("No stale line in MEMORY.md.")
        return 0
    for st in plan.stale:
        print(f"stale in MEMORY.md line {st.line}: {st.text.strip()}")
        print(f"    newer, {st.superseded_by}: {st.newer_text.strip()}")
    print(plan.diff, end="")
    print(f"Updated MEMORY.md (undo with --undo); backup {res.backup_path}" if res else
          "Write this update with --stale --apply (undo with --undo).")
    return 0


def _gate_values(args: argparse.Namespace) -> dict[str, Any]:
    from .. import promotion as pr

    def pick(v: Any, d: Any) -> Any:
        return d if v is None else v

    return {"minScore": pick(args.min_score, pr.DEFAULT_MIN_SCORE),
            "minRecallCount": pick(args.min_recall_count, pr.DEFAULT_MIN_RECALL_COUNT),
            "minUniqueQueries": pick(args.min_unique_queries, pr.DEFAULT_MIN_UNIQUE_QUERIES),
            "maxAgeDays": pick(args.max_age_days, pr.DEFAULT_MAX_AGE_DAYS),
            "limit": pick(args.limit, pr.DEFAULT_LIMIT)}


def _apply_or_preview(idx: Any, args: argparse.Namespace, passed: list[pr.PromotionCandidate],
                      now: int | None) -> int:
    from .. import promotion as pr

    # --apply alone shows no plan, so none is made here: apply plans under its own lock, and a
    # diary the agent appends to meanwhile is no reason to refuse. A preview, or --impact, shows
    # a plan, and that plan is what --apply writes (or refuses if anything changed since).
    plan = pr.preview_apply(idx, passed, now=now) if not args.apply or args.impact else None
    impact = None
    if args.impact and plan is not None:
        queries = pr.load_query_log(args.impact)
        impact = pr.impact_preview(idx, plan, queries, now=now)
    if args.apply:
        res = pr.apply(idx, plan if plan is not None else passed, now=now)
        if args.diary and res.wrote:
            pr.write_diary(idx, promoted=pr.promoted_snippets(idx, res.applied), now=now)
        if args.json:
            _dump_with_impact(res.to_dict(), impact)
            return 0
        if impact:
            _print_impact(impact)
        if res.wrote:
            print(f"Promoted {len(res.applied)} entr{'y' if len(res.applied) == 1 else 'ies'} "
                  f"into {res.memory_path}.")
            if res.backup_path:
                print(f"Backup: {res.backup_path}  (undo with: memory-core promote --undo)")
        else:
            print("Nothing new to promote.")
        _print_plan_notes(res.skipped, res.dropped_sections, res.warnings)
        return 0
    assert plan is not None  # made above whenever --apply is not given
    if args.json:
        _dump_with_impact(plan.to_dict(), impact)
        return 0
    if impact:
        _print_impact(impact)
    print(plan.diff or "No change to MEMORY.md.")
    _print_plan_notes(plan.skipped, plan.dropped_sections, plan.warnings)
    return 0


def _dump_with_impact(out: dict[str, Any], impact: pr.ImpactReport | None) -> None:
    """Print an apply result or a preview as JSON, with the impact preview when one was run."""
    if impact:
        out["impact"] = impact.to_dict()
    dump_json(out)


def _print_plan_notes(skipped: dict[str, str], dropped: list[str], warns: list[str]) -> None:
    for key, why in skipped.items():
        print(f"skipped {key}: {why}")
    for d in dropped:
        print(f"dropped the promoted section of {d} to stay within the budget")
    for w in warns:
        print(f"warning: {w}", file=sys.stderr)


def _print_impact(rep: pr.ImpactReport) -> None:
    d = rep.to_dict()
    print(f"Impact on retrieval (top {rep.k}): gold hits {d['recallBefore']} → "
          f"{d['recallAfter']} of {len(rep.queries)}; gained {d['gained']}, lost {d['lost']}.")
    for q in rep.queries:
        if q.change != "same" or q.promoted_rank:
            pr_ = f", promoted text at #{q.promoted_rank}" if q.promoted_rank else ""
            print(f"  {q.change:>6}: {q.query} (gold rank {q.before_rank} → {q.after_rank}{pr_})")


def _print_explain(info: dict[str, Any]) -> None:
    e = info["entry"]
    print(f"{e['key']}  score {info['score']:.3f}  "
          f"{'passes' if info['passed'] else 'gated'} (rank {info['rank']})")
    print(f"  {e['path']}:{e['startLine']}-{e['endLine']}  recalls {e['recallCount']}, daily "
          f"{e['dailyCount']}, grounded {e['groundedCount']}; first {e['firstRecalledAt']}, "
          f"last {e['lastRecalledAt']}; promoted {e['promotedAt'] or 'no'}")
    for k, v in info["components"].items():
        print(f"  {k:>13}: {v:.4f} = {info['weights'].get(k, 1.0):.2f} × "
              f"{info['rawComponents'][k]:.4f}   [{info['formulas'][k]}]")
    for name, g in info["gates"].items():
        print(f"  gate {name}: {g['value']} vs {g['threshold']}: "
              f"{'ok' if g['passed'] else 'FAILS'}")
    for r in info["reasons"]:
        print(f"  reason: {r}")
    loc = info["located"]
    print("  now at " + (f"{loc['path']}:{loc['startLine']}-{loc['endLine']} "
                         f"(match quality {loc['quality']})" if loc["found"] else loc["reason"]))
    if info["duplicate"]:
        d = info["duplicate"]
        likely = " (likely duplicate)" if d["likelyDuplicate"] else ""
        print(f"  closest MEMORY.md line {d['line']}: jaccard {d['jaccard']}, cosine "
              f"{d['cosine']}, coverage {d['coverage']}{likely}")
    print(f"  tags: {', '.join(e['conceptTags'])}")
    print("  recent signals:")
    for ev in info["events"][:20]:
        print(f"    {ev['at']} {ev['kind']:>6} {ev['score']:.3f} {ev['query']}")
    print(f"  snippet: {e['snippet'][:400]}")


def _replay_sessions(args: argparse.Namespace) -> int:
    """``replay --from-sessions``: recalls from the agent's real memory_search results."""
    from .. import promotion as pr
    from ..openclaw import mine_queries

    files = transcripts_of(args)
    # recorded when the tool answered (the reference records at the end of the call)
    calls = sorted(((q.query, q.result_at or q.at, q.results_then) for q in mine_queries(files)),
                   key=lambda c: (c[1] is None, c[1] or 0))
    with open_index(args) as idx:
        rep = pr.replay_tool_results(idx, calls, now=_now(args), reset=args.reset)
    if args.json:
        dump_json(rep.to_dict())
        return 0
    print(f"Replayed {rep.answered} of {rep.calls} memory_search calls from {len(files)} "
          f"transcripts: {rep.recalls_recorded} recalls recorded.")
    print(f"{rep.entries} tracked entries; {rep.candidates} pass the default gates "
          "(see: memory-core promote).")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from .. import promotion as pr

    if args.from_sessions:
        return _replay_sessions(args)
    if not args.queries:
        raise CliError("give --queries FILE (a query log) or --from-sessions")
    try:
        log = pr.load_query_log(args.queries)
    except OSError as e:
        raise CliError(f"{args.queries}: {e.strerror or e}") from e
    queries = [r["query"] for r in log]
    if not queries:
        raise CliError(f"{args.queries}: no queries")

    def progress(done: int, total: int) -> None:
        if not args.json and sys.stderr.isatty():
            print(f"\rreplay: {done}/{total} searches", end="", file=sys.stderr, flush=True)

    with open_index(args) as idx:
        rep = pr.replay(idx, queries, args.days, now=_now(args), progress=progress,
                        mode=args.mode, daily=not args.no_daily, reset=args.reset)
    if not args.json and sys.stderr.isatty():
        print(file=sys.stderr)
    if args.json:
        dump_json(rep.to_dict())
        return 0
    print(f"Replayed {rep.queries} queries ({rep.mode}) over {rep.days} days "
          f"({rep.first_day} → {rep.last_day}): {rep.searches} searches, "
          f"{rep.recalls_recorded} recalls and {rep.daily_recorded} daily signals recorded.")
    print(f"{rep.entries} tracked entries; {rep.candidates} pass the default gates "
          "(see: memory-core promote).")
    return 0


def cmd_dream(args: argparse.Namespace) -> int:
    """``dream``: run the Light and/or REM phase, writing their staging reports."""
    from .. import promotion as pr

    cfg = pr.DreamingConfig()
    tz = None
    if args.openclaw_home:
        from ..openclaw import open_home
        from ..openclaw.config import dreaming_settings, dreaming_timezone

        raw = open_home(args.openclaw_home, args.agent).raw
        cfg = pr.DreamingConfig.from_openclaw(dreaming_settings(raw))
        cfg.ingest_sessions = True  # the home binds its agent to the workspace
        tz = dreaming_timezone(raw)
    if args.sessions:
        cfg.ingest_sessions = True
    if args.storage:
        cfg.storage = args.storage
    with open_index(args) as idx:
        reports = pr.dream(idx, cfg, phase=args.phase, diary=args.diary, timezone=tz,
                           now=_now(args))
    if args.json:
        dump_json([r.to_dict() for r in reports])
        return 0
    for r in reports:
        print(f"{r.phase}: {r.considered} recent entries, {len(r.keys)} picked; wrote "
              f"{', '.join(r.written) or 'nothing'}")
    return 0


def _promote_options(p: argparse.ArgumentParser) -> None:
    """``promote``'s options; the help quotes the promotion gates' defaults."""
    from .. import promotion as pr

    add_workspace_args(p)
    p.add_argument("--explain", metavar="KEY", help="everything about one entry")
    p.add_argument("--apply", action="store_true", help="write the candidates into MEMORY.md")
    p.add_argument("--preview", action="store_true", help="show the diff --apply would write")
    p.add_argument("--diary", action="store_true",
                   help="with --apply: note what was promoted in the dream diary DREAMS.md")
    p.add_argument("--undo", action="store_true", help="restore MEMORY.md before the last apply")
    p.add_argument("--stale", action="store_true",
                   help="MEMORY.md lines a later memory line superseded, and the update's diff "
                        "(with --apply: write it)")
    p.add_argument("--force", action="store_true",
                   help="with --undo: restore even if MEMORY.md was edited since the apply")
    p.add_argument("--min-score", type=_finite, help=f"default {pr.DEFAULT_MIN_SCORE}")
    p.add_argument("--min-recall-count", type=int, help=f"default {pr.DEFAULT_MIN_RECALL_COUNT}")
    p.add_argument("--min-unique-queries", type=int,
                   help=f"default {pr.DEFAULT_MIN_UNIQUE_QUERIES}")
    p.add_argument("--max-age-days", type=_finite,
                   help=f"default {pr.DEFAULT_MAX_AGE_DAYS:g}; negative: no age gate")
    p.add_argument("--limit", type=int, help=f"default {pr.DEFAULT_LIMIT}; 0: no limit")
    p.add_argument("--include-promoted", action="store_true",
                   help="also list entries already promoted (they never pass)")
    p.add_argument("--all", action="store_true", help="also list gated entries, with reasons")
    p.add_argument("--ingest-daily", action="store_true",
                   help="first record the last 2 days' diary snippets as daily signals")
    p.add_argument("--impact", metavar="FILE",
                   help="with --preview/--apply: JSONL of {query, relevant:[{path,line}]}; "
                   "report which queries gain or lose their gold hit")
    p.add_argument("--no-duplicates", action="store_true",
                   help="skip the near-duplicate check against MEMORY.md")
    p.add_argument("--now", help="ISO 8601 time to score at (default: the clock)")
    p.add_argument("--timezone", metavar="TZ", help="record recall days as calendar days in "
                   "this IANA time zone from now on (kept per workspace; default UTC)")


def register(subparsers: Any) -> None:
    """Add ``promote`` and ``replay`` to the ``memory-core`` parser."""
    p = subparsers.add_parser(
        "promote", help="promotion: list, explain, preview, apply or undo "
        "recalled diary entries → MEMORY.md", configure=_promote_options)
    p.set_defaults(func=cmd_promote)

    r = subparsers.add_parser(
        "replay", help="seed recall signals from a JSONL query log over simulated days")
    add_workspace_args(r)
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--queries", help="JSONL with a 'query' field per line")
    src.add_argument("--from-sessions", action="store_true",
                     help="record the agent's real memory_search results from its transcripts "
                     "(at their own times), as the reference records them")
    r.add_argument("--days", type=int, default=7, help="simulated days ending today (default 7)")
    r.add_argument("--mode", choices=["spread", "repeat"], default="spread",
                   help="spread: the log once, cut into one slice per day (default); "
                   "repeat: the whole log every day")
    r.add_argument("--no-daily", action="store_true",
                   help="do not run daily-note ingestion at the end of each simulated day")
    r.add_argument("--reset", action="store_true", help="forget all recall signals first")
    r.add_argument("--now", help="ISO 8601 end of the replay (default: now)")
    r.set_defaults(func=cmd_replay)

    d = subparsers.add_parser(
        "dream", help="run the Light/REM dreaming phases: staging reports under "
        "memory/dreaming/ and phase signals for promotion")
    add_workspace_args(d)
    d.add_argument("--phase", choices=["light", "rem", "both"], default="both",
                   help="which phase (default: both, Light then REM)")
    d.add_argument("--storage", choices=["separate", "inline", "both"],
                   help="separate: memory/dreaming/<phase>/DAY.md (default); inline: a managed "
                   "block in today's diary; both")
    d.add_argument("--diary", action="store_true",
                   help="append a factual entry (what Light staged, what REM found) to the "
                   "dream diary DREAMS.md, between its diary markers")
    d.add_argument("--sessions", action="store_true",
                   help="also ingest the workspace's session transcripts (signal 3) into "
                   "memory/.dreams/session-corpus/ (on with --openclaw-home)")
    d.add_argument("--now", help="ISO 8601 time to run at (default: the clock)")
    d.set_defaults(func=cmd_dream)
