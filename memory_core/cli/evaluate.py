"""``memory-core eval``: measure retrieval on labelled queries (see :mod:`memory_core.evaluation`).

Examples::

    memory-core eval --queries demo --legs
    memory-core eval --queries locomo-markdown:all --legs --compare-profile reference \\
        --markdown /tmp/locomo.md --out /tmp/locomo.json
    memory-core eval --queries xquad-zh --sweep --vector-weights 0,0.3,0.5,0.7,1
    memory-core eval --queries my-queries.jsonl --workspace ~/agent
    memory-core eval --cv --queries locomo-markdown:all,xquad-en,xquad-zh \\
        --grid vector_weight=0.4,0.5,0.6 --grid date_hint=0,0.3     # held-out figures
    memory-core eval --queries locomo-markdown:all --executor ray   # one Ray task per workspace
    memory-core eval --queries 'longmemeval-s#30' --max-results 50 --set abstain_below=0
        # LongMemEval-S (one workspace per question; -all: every turn; :PATH; #N stratified)
    memory-core eval --queries locomo-markdown:all --executor ray --address ray://head:10001

Named sets read ``../shared/datasets`` beside the project; where it is absent the command says so
and exits with code 2. Indexes for shared data are built in ``~/.cache/memory-workbench/eval``.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.config import PROFILES, SearchSettings, check_values, checked_settings, profile_settings
from .common import EXIT_USAGE, CliError, progress_bar
from .eval_runs import add_run_flags, load_with_qrels, run_action, write_runs

if TYPE_CHECKING:
    from ..evaluation import EvalReport


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def _coerce(field: str, raw: str, flag: str = "--set") -> Any:
    """``raw`` as the type of :class:`SearchSettings`' ``field`` (bool, int, float or str),
    checked by the field's declaration (its range or choices) like any other door."""
    value = _typed(field, raw)
    check_values(SearchSettings, {field: value}, f"eval {flag}")
    return value


def _typed(field: str, raw: str) -> Any:
    defaults = SearchSettings()
    if not hasattr(defaults, field):
        raise CliError(f"unknown search setting {field!r}")
    current = getattr(defaults, field)
    try:
        if isinstance(current, bool):
            if raw.lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes", "on")
        if isinstance(current, int) or field == "now_ms":
            return int(raw)
        if isinstance(current, float) or (current is None and field != "now_ms"):
            return None if raw.lower() == "none" else float(raw)
    except ValueError as e:
        kind = "number (or none)" if current is None else type(current).__name__
        raise CliError(f"{field}={raw}: not a {kind}") from e
    return raw


def _pairs(items: list[str], many: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"{item!r}: expected FIELD=VALUE")
        field, raw = (x.strip() for x in item.split("=", 1))
        out[field] = ([_coerce(field, v, "--grid") for v in raw.split(",") if v.strip()]
                      if many else _coerce(field, raw))
    return out


def register(subparsers: Any) -> None:
    """Add the ``eval`` sub-command to the ``memory-core`` parser."""
    p = subparsers.add_parser(
        "eval", help="measure retrieval on labelled queries (Recall@k, Success@k, MRR, nDCG)",
        description=__doc__.split("\n")[0])
    p.add_argument("action", nargs="*", metavar="compare RUN_A RUN_B | runs",
                   help="compare two runs (TREC files with --qrels, or saved runs) with 95%% "
                   "intervals and p-values; or list the saved runs")
    p.add_argument("--queries", "-q", help="a query set name (see --list; also "
                   "longmemeval-s[-all][:PATH][#N]), a LoCoMo-style .jsonl file (with "
                   "--workspace) or a BEIR folder")
    p.add_argument("--list", action="store_true", help="list the query sets available here")
    p.add_argument("--workspace", "-w", help="workspace the .jsonl queries are judged against "
                   "(named sets bring their own)")
    p.add_argument("--profile", choices=PROFILES, help="ranking profile (default: default)")
    p.add_argument("--provider", help="embedding provider (default: the workspace's, local)")
    p.add_argument("--legs", action="store_true", help="also each leg alone (vector, keyword)")
    p.add_argument("--compare-profile", choices=PROFILES,
                   help="also run this profile (on its own index) and list wins and losses")
    p.add_argument("--sweep", action="store_true",
                   help="fuse the cached candidates over a grid (vector weight × minScore, …)")
    p.add_argument("--vector-weights", type=_floats, help="sweep values, e.g. 0,0.3,0.5,0.7,1")
    p.add_argument("--min-scores", type=_floats, help="sweep values, e.g. 0,0.1,0.2,0.35")
    p.add_argument("--multipliers", type=_ints, help="sweep candidate multipliers, e.g. 1,4,8")
    p.add_argument("--fusions", help="sweep fusion modes, comma-separated")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="override a search setting of the evaluated profile, e.g. "
                   "--set mmr_enabled=true --set vector_weight=0.5 (repeatable)")
    p.add_argument("--grid", action="append", default=[], metavar="FIELD=V1,V2,…",
                   help="with --sweep: sweep any search setting, e.g. --grid rrf_k=10,60 "
                   "(repeatable; replaces the default vector weight × minScore axes)")
    p.add_argument("--metric", help="metric of the sweep table and of the win/loss list "
                   "(default success@5; ndcg@10 for 'eval compare')")
    p.add_argument("--max-results", type=int, help="override maxResults")
    p.add_argument("--chunk-tokens", type=int, help="chunk budget of the evaluation index "
                   "(named sets only; default 400)")
    p.add_argument("--limit", type=int, help="only the first N queries of each workspace")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of tables")
    p.add_argument("--out", help="write the JSON report (with per-query rows) to this file")
    p.add_argument("--markdown", help="write the Markdown tables to this file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--dreaming", action="store_true", help="the dreaming evaluation: replay "
                   "LoCoMo dev day by day under the reference and default profiles (issue 25; "
                   "--provider, default none; --conversations to take a subset)")
    p.add_argument("--conversations", help="with --dreaming: comma-separated, e.g. conv-26")
    p.add_argument("--show-junk", action="store_true", help="with --dreaming: list each "
                   "profile's junk bullets (evidence for no question) after the table")
    p.add_argument("--cv", action="store_true", help="cross-validate: choose the constants "
                   "of --grid (default: weights, minScore, date hint) on training folds and "
                   "report the held-out folds (LoCoMo: leave one conversation out)")
    p.add_argument("--folds", type=int, default=5, help="with --cv: folds of a one-workspace "
                   "set such as BEIR (default 5)")
    p.add_argument("--objective", default="success@5+recall@5", help="with --cv: what the "
                   "training folds maximise, metrics joined by + (default success@5+recall@5)")
    p.add_argument("--no-cache", action="store_true", help="fetch candidates again instead "
                   "of reusing the ones kept in the evaluation cache")
    p.add_argument("--backend", choices=["builtin", "qmd"], default="builtin",
                   help="qmd: run the real qmd on the set's own workspaces (top 4, as the "
                   "reference, and top 10); builtin settings flags do not apply")
    p.add_argument("--qmd-mode", choices=["search", "vsearch", "query"], default="search",
                   help="qmd's search command with --backend qmd (default search, BM25)")
    p.add_argument("--executor", choices=["serial", "ray"], default="serial",
                   help="ray: one Ray task per workspace of the set (LoCoMo conversations, "
                   "shards), same metrics as serial (the default); needs the optional extra: "
                   "pip install -e '.[ray]'")
    p.add_argument("--address", help="with --executor ray: a running Ray cluster "
                   "(ray://HOST:10001 or HOST:6379) whose nodes have this package and see the "
                   "same paths; default: a local Ray with 2 workers, stopped afterwards")
    add_run_flags(p)
    p.set_defaults(func=cmd_eval)


def _emit(args: argparse.Namespace, out: dict[str, Any], text: str) -> None:
    """Write the JSON report to ``--out`` and the tables to ``--markdown`` (when asked), and
    print one of them: the JSON with ``--json``, else the tables."""
    report = json.dumps(out, ensure_ascii=False, indent=1)
    if args.out:
        Path(args.out).write_text(report, encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(text, encoding="utf-8")
    sys.stdout.write(report + "\n" if args.json else text)


def _eval_dreaming(args: argparse.Namespace) -> int:
    """``eval --dreaming``: both profiles' replay of LoCoMo dev, as a table or JSON."""
    from ..evaluation.dreaming import conversations, dreaming_table, run_dreaming_eval

    known = conversations()
    if not known:
        raise CliError("the dreaming evaluation needs LoCoMo dev (../shared/datasets/locomo-dev)")
    convs = [c.strip() for c in (args.conversations or "").split(",") if c.strip()] or None
    unknown = sorted(set(convs or []) - set(known))
    if unknown:
        raise CliError(f"unknown conversation {unknown[0]!r} (known: {', '.join(known)})")

    def progress(what: str) -> None:
        if not args.no_progress:
            sys.stderr.write(f"\r{what:<50}")
            sys.stderr.flush()

    runs = run_dreaming_eval(convs, provider=args.provider or "none", progress=progress)
    if not args.no_progress:
        sys.stderr.write("\n")
    text = dreaming_table(runs)
    if args.show_junk:
        for r in runs:
            text += f"\n{r.profile}: {len(r.junk_bullets)} junk bullets\n"
            text += "".join(f"  {b[:200]}\n" for b in r.junk_bullets)
    _emit(args, {"dreaming": [r.to_dict() for r in runs]}, text)
    return 0


def _eval_qmd(args: argparse.Namespace, qs: Any) -> int:
    """``eval --backend qmd``: the real qmd on the same labelled set."""
    from ..evaluation.backend_eval import run_qmd_eval

    if args.sweep or args.legs or args.compare_profile or args.set or args.grid:
        raise CliError("--sweep, --legs, --compare-profile, --set and --grid apply to the "
                       "builtin engine, not to --backend qmd")
    rep = run_qmd_eval(qs, mode=args.qmd_mode, progress=progress_bar(not args.no_progress),
                       limit=args.limit)
    _emit(args, {"reports": [rep.to_dict()]}, rep.to_markdown())
    return 0


def _flag_axes(args: argparse.Namespace) -> dict[str, list[Any]]:
    """The grid axes given by their own flags (``--vector-weights``, ``--min-scores``,
    ``--multipliers``), for ``--cv`` and ``--sweep``."""
    axes = {"vector_weight": args.vector_weights, "min_score": args.min_scores,
            "candidate_multiplier": args.multipliers}
    return {k: v for k, v in axes.items() if v}


def _runner(args: argparse.Namespace) -> Any:
    """``run_eval``, or its Ray twin (one task per workspace) with ``--executor ray``."""
    if args.executor != "ray":
        from ..evaluation import run_eval

        return run_eval
    from functools import partial

    from ..evaluation.ray_executor import run_eval_ray

    return partial(run_eval_ray, address=args.address)


def _eval_cv(args: argparse.Namespace, qs: Any, target: str | None, profile: str,
             progress: Any) -> tuple[dict[str, Any], list[str]]:
    """``eval --cv``: constants chosen on training folds, figures from the held-out ones.

    ``--queries A,B,C`` (``qs`` a list of names): one set of constants for all the sets.
    """
    from ..evaluation.cv import DEFAULT_CV_GRID, run_cv, run_cv_sets

    base = _settings(args, profile, _pairs(args.set, many=False))
    grid = {**_pairs(args.grid, many=True), **_flag_axes(args)} or DEFAULT_CV_GRID
    # a bad --objective is a ValueError: main prints it as one line, exit 2
    how: dict[str, Any] = dict(objective=args.objective, k=args.folds, profile=profile,
                               provider=args.provider, limit=args.limit,
                               chunk_tokens=args.chunk_tokens, cache=not args.no_cache)
    res = (run_cv_sets(qs, base, grid, progress, **how) if isinstance(qs, list)
           else run_cv(target, qs, base, grid, progress, **how))
    return {"cv": res.to_dict()}, [res.to_markdown()]


def _settings(args: argparse.Namespace, profile: str,
              overrides: dict[str, Any]) -> SearchSettings:
    """``profile``'s settings for ``--provider``, with ``--max-results`` and ``overrides`` (the
    ``--set`` pairs, or none for a compared profile)."""
    s = checked_settings(profile_settings(profile, args.provider), "eval",
                         {"max_results": "--max-results"}, max_results=args.max_results or None)
    return replace(s, **overrides) if overrides else s


def cmd_eval(args: argparse.Namespace) -> int:
    """Run the evaluation the flags ask for; print tables (or JSON) and write the files."""
    from ..evaluation import DatasetMissing, available_query_sets, load_query_set

    if args.action:
        return run_action(args)
    if args.list:
        names = available_query_sets()
        print("\n".join(names) if names else "No query sets found (../shared/datasets absent).")
        return 0
    if args.dreaming:
        return _eval_dreaming(args)
    _check_eval_flags(args)
    profile = args.profile or "default"
    qs: Any
    try:
        if args.cv and "," in args.queries:  # one profile cross-validated over several sets
            qs = [n.strip() for n in args.queries.split(",") if n.strip()]
            for n in qs:
                load_query_set(n)
        else:
            qs = (load_with_qrels(args) if args.qrels
                  else load_query_set(args.queries, args.workspace))
    except DatasetMissing as e:
        print(f"memory-core eval: {e}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(qs, list):
        out, md = _eval_cv(args, qs, None, profile, progress_bar(not args.no_progress))
        _emit(args, out, "\n".join(md))
        return 0
    if "" in qs.workspaces and qs.workspaces[""] is None and not args.workspace:
        raise CliError(f"{args.queries}: a query file needs --workspace")
    if not qs.queries:  # a table of zeros would read as a measured 0
        raise CliError(f"{args.queries}: no labelled query in it"
                       + (f" ({', '.join(f'{n} {why}' for why, n in qs.skipped.items())})"
                          if qs.skipped else ""))
    if (args.run_out or args.save_run is not None) and (args.cv or args.sweep
                                                         or args.backend == "qmd"):
        raise CliError("--run-out and --save-run apply to a plain evaluation (not --cv, "
                       "--sweep or --backend qmd)")
    if args.backend == "qmd":
        return _eval_qmd(args, qs)
    target = (args.workspace if args.workspace and (Path(args.queries).suffix == ".jsonl"
                                                    or args.qrels) else None)
    run = _eval_cv if args.cv else _eval_sweep if args.sweep else _eval_plain
    out, md = run(args, qs, target, profile, progress_bar(not args.no_progress))
    _emit(args, out, "\n".join(md))
    return 0


def _check_eval_flags(args: argparse.Namespace) -> None:
    """Refuse, in one line, the flags that cannot go together (before any work)."""
    if not args.queries:
        raise CliError("eval needs --queries SET_OR_FILE (or --list)")
    if args.address and args.executor != "ray":
        raise CliError("--address applies to --executor ray")
    for flag, value, least in (("--limit", args.limit, 1), ("--chunk-tokens", args.chunk_tokens,
                               1), ("--folds", args.folds, 2)):
        if value is not None and value < least:
            raise CliError(f"{flag} must be at least {least} (got {value})")
    if args.workspace and not Path(args.workspace).expanduser().is_dir():
        raise CliError(f"--workspace {args.workspace} is not a folder")
    fusions = [f.strip() for f in (args.fusions or "").split(",") if f.strip()]
    for field, flag, values in (("vector_weight", "--vector-weights", args.vector_weights),
                                ("min_score", "--min-scores", args.min_scores),
                                ("candidate_multiplier", "--multipliers", args.multipliers),
                                ("fusion", "--fusions", fusions)):
        for v in values or ():  # a sweep value out of range: refused before any work
            check_values(SearchSettings, {field: v}, "eval", {field: flag})
    if args.executor == "ray":
        if args.cv or args.sweep or args.backend != "builtin":
            raise CliError("--executor ray runs the plain evaluation (with --legs, --set, "
                           "--compare-profile), not --cv, --sweep or --backend qmd")
        from ..base.ray_session import INSTALL_HINT, ray_available

        if not ray_available():
            raise CliError(INSTALL_HINT)


def _eval_sweep(args: argparse.Namespace, qs: Any, target: str | None, profile: str,
                progress: Any) -> tuple[dict[str, Any], list[str]]:
    """``eval --sweep``: the grid the flags give (the default grid without any), one row per
    combination; its JSON and its Markdown."""
    from ..evaluation import DEFAULT_GRID, sweep, sweep_markdown

    extra = _pairs(args.grid, many=True)
    # without --grid, the default axes (vector weight × minScore), each replaced by its flag
    grid = {} if extra else dict(DEFAULT_GRID)
    grid.update(_flag_axes(args))
    if args.fusions:
        grid["fusion"] = [f.strip() for f in args.fusions.split(",") if f.strip()]
    grid.update(extra)
    rows = sweep(target, qs, _settings(args, profile, _pairs(args.set, many=False)), grid,
                 progress, profile=profile, provider=args.provider, limit=args.limit,
                 chunk_tokens=args.chunk_tokens)
    md = [f"### Sweep of {qs.name} ({profile} profile)", "",
          sweep_markdown(rows, args.metric or "success@5")]
    return {"sweep": rows}, md


def _eval_plain(args: argparse.Namespace, qs: Any, target: str | None, profile: str,
                progress: Any) -> tuple[dict[str, Any], list[str]]:
    """The plain evaluation (with ``--legs``, ``--set``, ``--compare-profile``): the reports,
    the comparison when there are two, and the run files written."""
    from ..evaluation import EvalConfig, leg_configs

    def measure(name: str, overrides: dict[str, Any], label: str, prefix: str = ""
                ) -> EvalReport:
        first = EvalConfig(label, _settings(args, name, overrides))
        configs = [first, *(leg_configs(first.settings, prefix) if args.legs else [])]
        return _runner(args)(target, qs, configs, progress, profile=name,
                             provider=args.provider, limit=args.limit,
                             chunk_tokens=args.chunk_tokens)

    overrides = _pairs(args.set, many=False)
    rep = measure(profile, overrides, profile + (
        " (" + ", ".join(f"{k}={v}" for k, v in overrides.items()) + ")" if overrides else ""))
    out: dict[str, Any] = {}
    md = [rep.to_markdown()]
    reports: list[EvalReport] = [rep]
    if args.compare_profile and args.compare_profile != profile:
        other = args.compare_profile
        reports.append(measure(other, {}, other, prefix=f"{other}: "))
    out["reports"] = [r.to_dict() for r in reports]
    if len(reports) > 1:
        md += _compared(reports[1], rep, args.metric or "success@5", qs, out)
    for note in write_runs(args, rep, qs):
        print(note, file=sys.stderr)
    return out, md


def _compared(orep: EvalReport, rep: EvalReport, metric: str, qs: Any,
              out: dict[str, Any]) -> list[str]:
    """The compared profile's report, the per-query comparison and its significance (added
    to ``out``), as Markdown."""
    from ..evaluation import compare, compare_markdown
    from ..evaluation.runs import compare_rows

    rows = compare(orep, rep, metric)
    out["compare"] = rows
    sig = compare_rows(orep.per_query, rep.per_query,
                       "file" if qs.level == "files" else "chunk",
                       label_a=orep.runs[0].label, label_b=rep.runs[0].label)
    out["significance"] = {k: v for k, v in sig.to_dict().items() if k != "per_query"}
    return [orep.to_markdown(), f"### Per-query {metric}: {orep.runs[0].label} (a) vs "
            f"{rep.runs[0].label} (b)", "", compare_markdown(rows), sig.to_markdown(limit=0)]
