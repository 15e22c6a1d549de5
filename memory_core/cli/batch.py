"""``search --batch FILE``: many queries against one loaded index, one JSON line out per query.

The file is streamed line by line (memory stays bounded even for ``/dev/zero``), and a bad line
never stops the batch: it gets an error line of its own (its ``qid``, or its line number) and
the other lines are answered. Queries are capped (:func:`cap_query`) so one enormous line cannot
hold the batch up for minutes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..common.fileio import iter_jsonl
from ..index import MemoryIndex
from .common import CliError

if TYPE_CHECKING:  # fusion is loaded by the first search, not by a no-op ``index``
    from ..fusion import Hit

#: A batch line longer than this is answered with an error (a query is a sentence, not a book).
MAX_LINE_BYTES = 64 * 1024
#: Characters of a query kept (and :data:`~memory_core.query.MAX_QUERY_TERMS` terms); the rest
#: is cut, with a note.
MAX_QUERY_CHARS = 4096


def cap_query(query: str) -> tuple[str, str | None]:
    """``query`` cut to :data:`MAX_QUERY_TERMS` terms and :data:`MAX_QUERY_CHARS` characters,
    and a note saying so (``None`` when it was within both)."""
    from ..query import MAX_QUERY_TERMS  # with the search itself, not a no-op ``index``

    terms = query.split()
    notes = []
    if len(terms) > MAX_QUERY_TERMS:
        query = " ".join(terms[:MAX_QUERY_TERMS])
        notes.append(f"query cut to its first {MAX_QUERY_TERMS} terms (of {len(terms)})")
    if len(query) > MAX_QUERY_CHARS:
        notes.append(f"query cut to its first {MAX_QUERY_CHARS} characters (of {len(query)})")
        query = query[:MAX_QUERY_CHARS]
    return query, "; ".join(notes) or None


def _qid(rec: Any, line: int) -> Any:
    """The line's ``qid`` when it has a usable one (a string or an integer), else its number."""
    if isinstance(rec, dict):
        qid = rec.get("qid")
        if isinstance(qid, str | int) and not isinstance(qid, bool):
            return qid
    return line


def _query_of(rec: Any) -> tuple[str | None, str | None]:
    """``(query, None)`` for a usable line, ``(None, why)`` otherwise."""
    if not isinstance(rec, dict):
        return None, "not a JSON object with a query"
    query = rec.get("query")
    if not isinstance(query, str):
        return None, ("not a JSON object with a query" if query is None
                      else f"query is a {type(query).__name__}, not a string")
    if not query.strip():
        return None, "empty query"
    return query, None


def search_batch(idx: MemoryIndex, batch: str, *, max_results: int | None,
                 min_score: float | None, sources: list[str] | None, explain: bool,
                 on_hits: Callable[[str, Sequence[Hit]], None] | None,
                 overrides: dict[str, Any]) -> int:
    """Answer every ``{qid, query}`` line of ``batch``; the model and index load once.

    Each non-blank input line gives exactly one output line: ``{qid, results}`` (plus ``note``
    when the query was capped) or ``{qid, line, error, results: []}``; errors are also
    reported on stderr. Exit code 0 even when some lines were bad (they are in the output).
    """
    path = Path(batch)
    try:
        with path.open("rb"):
            pass
    except OSError as e:
        raise CliError(f"{path}: {e.strerror or e}") from e
    idx.ensure_synced()
    for item in iter_jsonl(path, max_line_bytes=MAX_LINE_BYTES):
        qid = _qid(item.value, item.line)
        query, why = (None, item.error) if item.error else _query_of(item.value)
        if query is None:
            print(f"memory-core: {path}:{item.line}: {why}, skipped", file=sys.stderr)
            out: dict[str, Any] = {"qid": qid, "line": item.line, "error": why, "results": []}
        else:
            query, note = cap_query(query)
            res = idx.search(query, max_results=max_results, min_score=min_score,
                             sources=sources, on_hits=on_hits, **overrides)
            out = {"qid": qid, "results": [h.to_result(explain) for h in res.hits]}
            if note:
                out["note"] = note
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()  # a consumer reading the pipe sees each answer as it comes
    return 0
