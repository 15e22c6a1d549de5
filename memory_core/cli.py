"""``memory-core``: the command line, a thin mirror of :class:`memory_core.MemoryIndex`.

Every command takes ``--json`` for machine-readable output. Errors are one line on stderr and a
non-zero exit code; nothing here writes the user's Markdown.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .chunking import chunk_markdown
from .config import PROFILES
from .embeddings import EmbeddingError
from .fusion import FusionResult
from .index import MemoryIndex, WorkspaceError
from .reading import PathRefused
from .store import StoreError

EXIT_USAGE = 2


class CliError(Exception):
    """An error the user can act on: printed as one line, exit code 2."""


def _dump(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def _progress_bar(enabled: bool) -> Callable[[str, int, int], None] | None:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm comes with sentence-transformers
        return None
    bars: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="file" if stage == "scan"
                                     else "chunk", file=sys.stderr, leave=False)
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return progress


def _open(args: argparse.Namespace) -> MemoryIndex:
    overrides: dict[str, Any] = {}
    if getattr(args, "db", None):
        overrides["store"] = {"path": args.db}
    return MemoryIndex.open(args.workspace, profile=getattr(args, "profile", None),
                            provider=getattr(args, "provider", None), overrides=overrides)


def _add_workspace(p: argparse.ArgumentParser, profile: bool = True) -> None:
    p.add_argument("--workspace", "-w", required=True, help="the agent workspace folder")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--provider", help="embedding provider: local, e5, openai, ollama, lmstudio, "
                   "none (keyword-only)")
    p.add_argument("--db", help="index file (default: inside the workspace, .memory/)")
    if profile:
        p.add_argument("--profile", choices=PROFILES, help="ranking profile (default: default)")


# ----------------------------------------------------------------------------- commands


def cmd_index(args: argparse.Namespace) -> int:
    with _open(args) as idx:
        report = idx.sync(force=args.force, progress=_progress_bar(not args.no_progress))
        if args.json:
            _dump({"report": report.to_dict(), "status": idx.status()})
            return 0
        kind = f"full rebuild ({report.reason})" if report.full else "incremental"
        print(f"Memory index updated: {kind}.")
        print(f"  files: {report.files_seen} seen, {report.files_indexed} indexed, "
              f"{report.files_unchanged + report.files_touched} unchanged, "
              f"{report.files_deleted} deleted, {report.files_failed} skipped")
        print(f"  chunks written: {report.chunks_written}; embedded: {report.embedded}; "
              f"cache hits: {report.cache_hits}; {report.duration_ms / 1000:.1f} s")
        if idx.fallback:
            print(f"  fallback: {idx.fallback['from']} → {idx.choice.id}: "
                  f"{idx.fallback['reason']}")
        for w in report.warnings:
            print(f"  warning: {w}", file=sys.stderr)
    return 0


def _settings_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "vector_weight": args.vector_weight, "text_weight": args.text_weight,
        "candidate_multiplier": args.candidate_multiplier, "fusion": args.fusion,
    }


def _result_json(idx: MemoryIndex, res: FusionResult, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "results": [h.to_result(explain) for h in res.hits],
        "provider": idx.choice.id, "model": idx.choice.model, "mode": res.mode,
        "profile": idx.config.profile,
    }
    if idx.fallback:
        out["fallback"] = idx.fallback
    if explain:
        out["belowGate"] = [h.to_result(True) for h in res.below_gate[:20]]
        out["settings"] = res.settings.__dict__
    return out


def _print_hits(res: FusionResult, explain: bool) -> None:
    if not res.hits:
        print("No results.")
    for h in res.hits:
        print(f"{h.score:.3f} {h.path}:{h.start_line}-{h.end_line}")
        if explain:
            vr = h.vector_rank if h.vector_rank is not None else "-"
            tr = h.text_rank if h.text_rank is not None else "-"
            parts = " + ".join(f"{k} {v:.3f}" for k, v in h.components.items())
            print(f"      via {h.via}: vector {h.vector_score:.3f} (rank {vr}), "
                  f"text {h.text_score:.3f} (rank {tr}); score = {parts}")
        print("      " + h.snippet.replace("\n", "\n      ")[:400])


def cmd_search(args: argparse.Namespace) -> int:
    sources = args.sources.split(",") if args.sources else None
    with _open(args) as idx:
        idx.record_recalls = not args.no_record
        if args.batch:
            return _search_batch(idx, args, sources)
        if not args.query:
            raise CliError("search needs a QUERY (or --batch FILE)")
        res = idx.search(args.query, max_results=args.max_results, min_score=args.min_score,
                         sources=sources, use_numpy=args.numpy, **_settings_overrides(args))
        if args.json:
            _dump(_result_json(idx, res, args.explain))
        else:
            _print_hits(res, args.explain)
    return 0


def _search_batch(idx: MemoryIndex, args: argparse.Namespace, sources: list[str] | None) -> int:
    path = Path(args.batch)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e}") from e
    idx.ensure_synced()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            query = rec["query"]
        except (json.JSONDecodeError, KeyError, TypeError):
            print(f"memory-core: {path}:{n}: not a JSON object with a query, skipped",
                  file=sys.stderr)
            continue
        res = idx.search(query, max_results=args.max_results, min_score=args.min_score,
                         sources=sources, **_settings_overrides(args))
        out = {"qid": rec.get("qid", n), "results": [h.to_result(args.explain)
                                                      for h in res.hits]}
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with _open(args) as idx:
        res = idx.get(args.path, args.from_line, args.lines)
        if args.json:
            _dump(res.to_dict())
        else:
            print(res.text)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with _open(args) as idx:
        st = idx.status(deep=args.deep)
        if args.json:
            _dump(st)
            return 0
        print(f"Workspace: {st['workspaceDir']}")
        print(f"Store: {st['dbPath']}")
        print(f"Profile: {st['profile']}  Provider: {st.get('provider')} "
              f"(requested {st['requestedProvider']})  Model: {st.get('model')}")
        print(f"Indexed: {st.get('files', 0)} files · {st.get('chunks', 0)} chunks  "
              f"Dirty: {'yes' if st.get('dirty') else 'no'}")
        for sc in st.get("sourceCounts", []):
            print(f"  {sc['source']}: {sc['files']} files, {sc['chunks']} chunks")
        if "fts" in st:
            print(f"FTS: {'available' if st['fts']['available'] else 'unavailable'}"
                  + (f" ({st['fts']['error']})" if st['fts']['error'] else ""))
            v = st["vector"]
            print(f"Vector: {v['search']} search, dims {v['dims']}"
                  + (f" (sqlite-vec: {v['loadError']})" if v["loadError"] else ""))
            print(f"Embedding cache: {st['cache']['entries']} entries")
        if st.get("fallback"):
            print(f"Fallback: from {st['fallback']['from']}: {st['fallback']['reason']}")
        if st.get("badJsonlLines"):
            print(f"Malformed transcript lines skipped: {st['badJsonlLines']}")
        if "truncation" in st and st["truncation"].get("available"):
            t = st["truncation"]
            print(f"Model truncation: {t['truncated']}/{t['chunks']} chunks "
                  f"({t['share']:.0%}) are longer than {t['maxSeqLength']} word pieces")
        for w in st.get("warnings", []):
            print(f"warning: {w}")
        if st.get("error"):
            print(f"error: {st['error']}")
    return 0


def cmd_chunk(args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e}") from e
    text = data.decode("utf-8", "replace")
    chunks = chunk_markdown(text, args.tokens, args.overlap, args.mode)
    if args.json:
        _dump({"file": str(path), "mode": args.mode, "tokens": args.tokens,
               "overlap": args.overlap, "count": len(chunks),
               "chunks": [c.to_dict() for c in chunks]})
    else:
        for i, c in enumerate(chunks):
            print(f"#{i} lines {c.start_line}-{c.end_line} {len(c.text)} chars {c.hash[:12]}")
    return 0


# ----------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory-core", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"memory-core {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="index (or update) a workspace")
    _add_workspace(p)
    p.add_argument("--force", action="store_true", help="full rebuild (built aside, swapped in)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="memory_search: hybrid search of a workspace")
    p.add_argument("query", nargs="?", help="what to look for")
    _add_workspace(p)
    p.add_argument("--batch", help="JSONL file of {qid, query}; one JSON line out per query")
    p.add_argument("--max-results", type=int)
    p.add_argument("--min-score", type=float)
    p.add_argument("--vector-weight", type=float)
    p.add_argument("--text-weight", type=float)
    p.add_argument("--candidate-multiplier", type=int)
    p.add_argument("--fusion", choices=["reference", "rrf", "normalized"])
    p.add_argument("--sources", help="comma-separated: memory,sessions")
    p.add_argument("--explain", action="store_true", help="show each leg's score and rank")
    p.add_argument("--numpy", action="store_true", help="vector search in numpy (not sqlite-vec)")
    p.add_argument("--no-record", action="store_true",
                   help="do not record diary hits as recalls for promotion")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("get", help="memory_get: read lines of a memory file")
    p.add_argument("path")
    _add_workspace(p, profile=False)
    p.add_argument("--from", dest="from_line", type=int, default=None)
    p.add_argument("--lines", type=int, default=None)
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("status", help="index status")
    _add_workspace(p)
    p.add_argument("--deep", action="store_true", help="also measure model truncation")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("chunk", help="show how a file is chunked")
    p.add_argument("file")
    p.add_argument("--mode", choices=["reference", "bounded"], default="bounded")
    p.add_argument("--tokens", type=int, default=400)
    p.add_argument("--overlap", type=int, default=80)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_chunk)

    for register in _extensions():
        register(sub)
    return parser


def _extensions() -> list[Callable[[Any], None]]:
    """Sub-commands that live beside their feature modules (evaluation, promotion)."""
    regs: list[Callable[[Any], None]] = []
    for name in ("cli_eval", "cli_promote"):
        try:
            mod = __import__(f"memory_core.{name}", fromlist=["register"])
        except ModuleNotFoundError as e:
            if e.name != f"memory_core.{name}":
                raise
            continue
        regs.append(mod.register)
    return regs


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CliError, WorkspaceError, StoreError, PathRefused, EmbeddingError, ValueError,
            FileNotFoundError) as e:
        print(f"memory-core: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
