"""``index``, ``search``, ``get``, ``status`` and ``chunk``: the engine's own commands, a thin
mirror of :class:`memory_core.MemoryIndex` (``memory_search``, ``memory_get``, status).

``search`` records diary hits as recalls for promotion (unless ``--no-record``); the promotion
package is imported only when a search has hits to record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from ..base.config import SOURCE_NAMES, ChunkingConfig, ChunkingMode, check_values
from ..index import MemoryIndex
from ..write.chunking import chunk_markdown
from .batch import search_batch
from .common import (
    CliError,
    add_backend_arg,
    add_setting_flags,
    add_workspace_args,
    backend_for,
    dump_json,
    open_index,
    progress_bar,
    setting_flags,
)

if TYPE_CHECKING:  # fusion is loaded by the first search, not by a no-op ``index``
    from ..backends import BackendSearch, BackendStatus
    from ..read.fusion import Hit

#: The search settings ``search`` takes as flags (``--vector-weight`` ...).
SEARCH_FLAGS = ("max_results", "min_score", "vector_weight", "text_weight",
                "candidate_multiplier", "fusion")


def _executor(args: argparse.Namespace, idx: MemoryIndex) -> Any:
    """``--executor ray``'s actor pool (``None``: embed here, serially)."""
    if args.executor != "ray":
        if args.address or args.actors is not None:
            raise CliError("--address and --actors apply to --executor ray")
        return None
    if args.actors is not None and args.actors < 1:
        raise CliError("--actors must be at least 1")
    from ..base.ray_session import INSTALL_HINT, ray_available

    if not ray_available():
        raise CliError(INSTALL_HINT)
    from ..embeddings.ray_pool import RayEmbedPool

    return RayEmbedPool(idx.config.provider, address=args.address, actors=args.actors)


def cmd_index(args: argparse.Namespace) -> int:
    with open_index(args) as idx, backend_for(idx, args) as backend:
        done = backend.sync(force=args.force, progress=progress_bar(not args.no_progress),
                            verify=args.verify, executor=_executor(args, idx))
        if args.json:
            dump_json({"report": done.report, "status": backend.status().to_json()})
            return 0
        for line in done.summary:
            print(line)
        for w in done.warnings:
            print(f"  warning: {w}", file=sys.stderr)
    return 0


class LazyRecallRecorder:
    """``on_hits`` for :meth:`MemoryIndex.search` that records recalls for promotion.

    The promotion package (and its state store) is loaded on the first search that has hits, so
    a search that finds nothing, or ``--no-record``, never imports it. One state-store
    connection serves every search of a ``--batch`` (promotion's ``BatchRecorder``), closed by
    :meth:`close`.
    """

    def __init__(self, index: MemoryIndex) -> None:
        self._index = index
        self._record: Any = None

    def __call__(self, query: str, hits: Sequence[Hit]) -> None:
        if self._record is None:
            from ..promotion.signals import BatchRecorder

            self._record = BatchRecorder(self._index)
        self._record(query, hits)

    def close(self) -> None:
        if self._record is not None:
            self._record.close()


def _result_json(idx: MemoryIndex, res: BackendSearch, explain: bool) -> dict[str, Any]:
    """The answer as JSON: what the backend's answer holds, and the profile asked for."""
    out = res.to_json(explain)
    out["profile"] = idx.config.profile
    out["requestedBackend"] = res.backend if res.fallback is None else res.fallback.from_backend
    return out


def _print_hits(hits: Sequence[Hit], explain: bool, abstention: str = "") -> None:
    if not hits:
        print(f"No results: {abstention}." if explain and abstention else "No results.")
    for h in hits:
        print(f"{h.score:.3f} {h.path}:{h.start_line}-{h.end_line}")
        if explain:
            vr = h.vector_rank if h.vector_rank is not None else "-"
            tr = h.text_rank if h.text_rank is not None else "-"
            print(f"      via {h.via}: vector {h.vector_score:.3f} (rank {vr}), "
                  f"text {h.text_score:.3f} (rank {tr}); {fusion_text(h)}")
            if h.superseded_by is not None or h.currency != 1.0:
                print(f"      current: ×{h.currency:.2f} before calibration"
                      + (f"; superseded by {h.superseded_by}" if h.superseded_by else ""))
            if h.evidence is not None:
                print("      then " + calibration_text(h.evidence))
        elif h.superseded_by is not None:
            print(f"      superseded by {h.superseded_by}")
        print("      " + h.snippet.replace("\n", "\n      ")[:400])


def fusion_text(h: Hit) -> str:
    """The fusion's own arithmetic for one hit: ``fused 0.680 = 0.7×vector 0.496 + 0.3×text
    0.347`` (each leg's weight times its value, then any bonus), before any calibration."""
    ev = h.evidence or {}
    comps: dict[str, float] = ev.get("fused_components") or h.components  # type: ignore[assignment]
    parts = []
    for k, c in comps.items():
        if k in h.terms and h.decay == 1.0:
            w, v = h.terms[k]
            parts.append(f"{w:g}×{k} {v:.3f}")
        else:
            parts.append(f"{k} {c:.3f}")
    decay = f" (decay ×{h.decay:.3f} included)" if h.decay != 1.0 else ""
    return f"fused {sum(comps.values()):.3f} = " + " + ".join(parts) + decay


def calibration_text(ev: dict[str, Any]) -> str:
    """A calibrated hit's arithmetic on one line: logit terms, the logistic, its correction."""
    terms = ev.get("logit_terms") or {}
    feats = ev.get("features") or {}
    parts = " ".join(f"{v:+.2f} {k}({feats.get(k, 0.0):.2f})" for k, v in terms.items())
    return (f"calibrated ({ev.get('model')}): logit {ev.get('intercept', 0.0):+.2f} {parts}"
            f" = {ev.get('logit', 0.0):.2f} → logistic {ev.get('logistic', 0.0):.3f} → "
            f"isotonic {ev.get('probability', 0.0):.3f}")


def _query(args: argparse.Namespace) -> str:
    """The one ``QUERY`` of ``search``, refused when blank (the library cuts a long one)."""
    if not args.query or not args.query.strip():
        raise CliError("search needs a QUERY (or --batch FILE)")
    return str(args.query)


def _sources(given: str | None) -> list[str] | None:
    """``--sources``' names, each one of memory and sessions (a typo would find nothing)."""
    if given is None:
        return None
    names = [s.strip() for s in given.split(",")]
    bad = [s for s in names if s not in SOURCE_NAMES]
    if bad:
        raise CliError(f"--sources {given!r}: expected names of {', '.join(SOURCE_NAMES)}")
    return names


def cmd_search(args: argparse.Namespace) -> int:
    sources = _sources(args.sources)
    flags = setting_flags(args, SEARCH_FLAGS, "search")  # out of range: one line, exit 2, no work
    with open_index(args) as idx, closing(LazyRecallRecorder(idx)) as recorder, \
            backend_for(idx, args) as backend:
        search = dict(sources=sources, on_hits=None if args.no_record else recorder, **flags)
        if args.batch:
            return search_batch(backend, args.batch, args.explain, search)
        res = backend.search(_query(args), **search)
        if idx.sync_skipped:  # the files changed may not be in these results: said
            print(f"note: {idx.sync_skipped}", file=sys.stderr)
        if args.json:
            dump_json(_result_json(idx, res, args.explain))
            return 0
        if res.note:
            print(f"note: {res.note}", file=sys.stderr)
        if res.fallback is not None:
            print(f"note: {res.fallback.from_backend} fell back to builtin: "
                  f"{res.fallback.reason}", file=sys.stderr)
        abstention = res.detail.abstention if res.detail is not None else ""
        _print_hits(res.hits, args.explain, abstention)
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    with open_index(args) as idx, backend_for(idx, args) as backend:
        res = backend.get(args.path, args.from_line, args.lines)
        if args.json:
            dump_json(res.to_dict())
        else:
            print(res.text)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    with open_index(args) as idx, backend_for(idx, args) as backend:
        st = backend.status(deep=args.deep)
        # A damaged or unreadable index is an error, not a status: exit 2 after saying so.
        code = 2 if st.error else 0
        if args.json:
            dump_json(st.to_json())
            return code
        print_status(st)
    return code


def print_status(st: BackendStatus) -> None:
    """``status`` for a person: what the backend's status holds, one line per part."""
    print(f"Workspace: {st.workspace_dir}")
    qmd = st.custom.get("qmd")
    print(f"Backend: {st.backend}" + (f" (qmd {qmd['version']}, mode "
                                      f"{qmd['searchMode']})" if qmd else ""))
    for c in (qmd or {}).get("collections", []):
        print(f"  collection {c['name']}: {c['path']} ({c['pattern']}), {c['files']} files")
    print(f"Store: {st.db_path}")
    print(f"Profile: {st.profile}  Provider: {st.provider} "
          f"(requested {st.requested_provider})  Model: {st.model}")
    print(f"Indexed: {st.files} files · {st.chunks} chunks  "
          f"Dirty: {'yes' if st.dirty else 'no'}")
    for sc in st.source_counts:
        print(f"  {sc.source}: {sc.files} files, {sc.chunks} chunks")
    if st.fts is not None:
        print(f"FTS: {'available' if st.fts.available else 'unavailable'}"
              + (f" ({st.fts.error})" if st.fts.error else "")
              + (", keyword postings sidecar" if st.fts.postings else ""))
    if st.vector is not None:
        v = st.vector
        print(f"Vector: {v.describe_search()}, dims {v.dims}"
              + (f" (sqlite-vec: {v.load_error})" if v.load_error else
                 " (sqlite-vec loaded as the fallback)" if v.search == "sidecar"
                 and v.store_available else ""))
    if st.cache is not None:
        print(f"Embedding cache: {st.cache.entries} entries")
    if st.fallback is not None:
        print(f"Fallback: from {st.fallback.from_provider}: {st.fallback.reason}")
    _print_counts(st)


def _print_counts(st: BackendStatus) -> None:
    if st.bad_jsonl_lines:
        print(f"Malformed transcript lines skipped: {st.bad_jsonl_lines}")
    if st.skipped_files:
        print(f"Files skipped (unreadable; see warnings): {st.skipped_files}")
    notes = [w for ws in st.file_warnings.values() for w in ws.split("\n")]
    if notes:  # what was repaired or skipped, file and line (the full list: --json)
        print(f"Files with warnings: {len(st.file_warnings)}")
        print("".join(f"  {w}\n" for w in notes[:10]), end="")
    if st.fts is not None:
        print(f"Superseded memory lines: {st.superseded}")
    for line, newer in sorted(st.stale_memory.items()):
        print(f"stale in MEMORY.md: line {line}, superseded by {newer}")
    t = st.truncation
    if t is not None and t.available:
        print(f"Model truncation: {t.truncated}/{t.chunks} chunks ({t.share:.0%}) cut; "
              f"{t.windowed} longer than {t.max_seq_length} word pieces embedded in windows")
    for w in st.warnings:
        print(f"warning: {w}")
    if st.error:
        print(f"error: {st.error}", file=sys.stderr)


def cmd_chunk(args: argparse.Namespace) -> int:
    path = Path(args.file)
    data = path.read_bytes()  # a missing file: one line from main, as any OSError
    check_values(ChunkingConfig, {"tokens": args.tokens, "overlap": args.overlap}, "chunk",
                 {"tokens": "--tokens", "overlap": "--overlap"})  # 0 or -1: one line
    text = data.decode("utf-8", "replace")
    chunks = chunk_markdown(text, args.tokens, args.overlap, args.mode)
    if args.json:
        dump_json({"file": str(path), "mode": args.mode, "tokens": args.tokens,
                   "overlap": args.overlap, "count": len(chunks),
                   "chunks": [c.to_dict() for c in chunks]})
    else:
        for i, c in enumerate(chunks):
            print(f"#{i} lines {c.start_line}-{c.end_line} {len(c.text)} chars {c.hash[:12]}")
    return 0


def register(sub: Any) -> None:
    """Add ``index``, ``search``, ``get``, ``status`` and ``chunk`` to the parser."""
    p = sub.add_parser("index", help="index (or update) a workspace")
    add_workspace_args(p)
    add_backend_arg(p)
    p.add_argument("--force", action="store_true", help="full rebuild (built aside, swapped in)")
    p.add_argument("--verify", action="store_true",
                   help="check every page of the index first (PRAGMA quick_check; seconds on a "
                        "large index) and rebuild it aside from the Markdown if it is damaged")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--executor", choices=["serial", "ray"], default="serial",
                   help="ray: embed with a Ray actor pool while this process writes the index "
                   "(same vectors as serial, the default); needs pip install -e '.[ray]'")
    p.add_argument("--address", help="with --executor ray: a running Ray cluster "
                   "(ray://HOST:10001 or HOST:6379); default: a local Ray with 2 workers")
    p.add_argument("--actors", type=int, help="with --executor ray: embedding actors "
                   "(default: one per CPU of the cluster)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="memory_search: hybrid search of a workspace")
    p.add_argument("query", nargs="?", help="what to look for")
    add_workspace_args(p)
    p.add_argument("--batch", help="JSONL file of {qid, query}; one JSON line out per query")
    add_backend_arg(p)
    add_setting_flags(p, SEARCH_FLAGS)
    p.add_argument("--sources", help="comma-separated: " + ",".join(SOURCE_NAMES))
    p.add_argument("--explain", action="store_true", help="show each leg's score and rank")
    p.add_argument("--no-record", action="store_true",
                   help="do not record diary hits as recalls for promotion")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("get", help="memory_get: read lines of a memory file")
    p.add_argument("path")
    add_workspace_args(p, profile=False)
    add_backend_arg(p)
    p.add_argument("--from", dest="from_line", type=int, default=None)
    p.add_argument("--lines", type=int, default=None)
    p.set_defaults(func=cmd_get)

    p = sub.add_parser("status", help="index status")
    add_workspace_args(p)
    add_backend_arg(p)
    p.add_argument("--deep", action="store_true", help="also measure model truncation")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("chunk", help="show how a file is chunked")
    p.add_argument("file")
    p.add_argument("--mode", choices=get_args(ChunkingMode), default="bounded")
    p.add_argument("--tokens", type=int, default=400)
    p.add_argument("--overlap", type=int, default=80)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_chunk)
