"""The agent tools: ``memory_search`` and ``memory_get`` in the reference's shapes (§4.8, §5).

An agent framework registers these two functions (or wraps them as MCP tools); both return plain
JSON-ready dicts and never raise for bad input: errors come back in the result, as the reference's
tools do, so the model can read them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .embeddings import EmbeddingError
from .fusion import Hit
from .index import MemoryIndex
from .promotion import recall_recorder
from .reading import PathRefused
from .store import IndexUnavailable, StoreError

MEMORY_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "memory_search",
    "description": "Search the agent's long-term memory (MEMORY.md, dated diaries, notes, past "
                   "sessions) before answering questions about prior work, decisions, dates, "
                   "people, preferences or todos. Returns snippets with path and line range; "
                   "an empty result (no error) means nothing relevant is stored.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "maxResults": {"type": "integer"},
        "minScore": {"type": "number"},
        "corpus": {"type": "string", "enum": ["memory", "sessions", "all"]}},
        "required": ["query"]},
}
MEMORY_GET_SCHEMA: dict[str, Any] = {
    "name": "memory_get",
    "description": "Read exact lines of a memory file or session transcript found by "
                   "memory_search (its path, from = startLine, lines = endLine - startLine + 1).",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "from": {"type": "integer"}, "lines": {"type": "integer"}},
        "required": ["path"]},
}


#: The ``corpus`` values this workspace can answer (no wiki supplements here).
_CORPORA = (None, "memory", "sessions", "all")


class _BadArgument(ValueError):
    """A tool argument that cannot be used; its message goes back to the model."""


def _number(value: object, key: str, *, integer: bool) -> float | int | None:
    """A numeric tool argument: a number, or a numeric string as the reference's tools read it
    (``"5"`` → 5, ``" 2.5 "`` → 2.5); integers are truncated, as ``readNumberParam``'s
    ``integer`` option does. ``None`` or an empty string: not given.

    Where the reference silently drops a value it cannot read (``"x"``, ``true``) and uses the
    default, this reports it: the model asked for something else than it would get.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            number = float(text)
        except ValueError:
            raise _BadArgument(f"{key} must be a number (got {value[:40]!r})") from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = value
    else:
        raise _BadArgument(f"{key} must be a number (got {type(value).__name__})")
    if not math.isfinite(number):
        raise _BadArgument(f"{key} must be a finite number (got {value!r})")
    return math.trunc(number) if integer else float(number)


def _text(value: object, key: str) -> str:
    """A required string argument, trimmed; the reference's ``"<key> required"`` otherwise."""
    if not isinstance(value, str) or not value.strip():
        got = "an empty string" if isinstance(value, str) else type(value).__name__
        raise _BadArgument(f"{key} required: a non-empty string (got {got})")
    if "\x00" in value:
        raise _BadArgument(f"{key} must not contain NUL characters")
    return value.strip()


def unavailable_result(error: str, *, damaged: bool = False) -> dict[str, Any]:
    """The reference's answer when memory cannot be searched (§4.8): never an empty success.

    ``damaged``: the index file is broken (not the embedding provider), so the action names the
    rebuild rather than the provider configuration.
    """
    reason = error.strip() or "memory search unavailable"
    if damaged:
        warning = "Memory search is unavailable because the memory index is damaged."
        action = "Run `memory-core index` to rebuild it from the Markdown, then retry " \
                 "memory_search."
    else:
        warning = "Memory search is unavailable due to an embedding/provider or index error."
        action = "Run `memory-core status` to see what is wrong, then retry memory_search."
    return {"results": [], "disabled": True, "unavailable": True, "error": reason,
            "warning": warning, "action": action,
            "debug": {"warning": warning, "action": action, "error": reason}}


def memory_search(index: MemoryIndex, query: object, maxResults: object = None,
                  minScore: object = None, corpus: object = None,
                  record: bool = True) -> dict[str, Any]:
    """Search; results re-sorted by score (ties by path) as the reference's tool does.

    Hits on dated diaries are recorded as recalls for promotion unless ``record`` is False.
    Never raises: a bad argument gives ``{results: [], error}``; an index or provider that cannot
    answer gives the reference's unavailable result (``unavailable: true`` and why).
    """
    try:
        q = _text(query, "query")
        max_results = _number(maxResults, "maxResults", integer=True)
        min_score = _number(minScore, "minScore", integer=False)
        if corpus not in _CORPORA:
            raise _BadArgument(f"corpus must be one of memory, sessions, all (got {corpus!r:.40})")
    except _BadArgument as e:
        return {"results": [], "error": str(e)}
    sources = None if corpus in (None, "all") else [str(corpus)]
    try:
        res = index.search(q, max_results=max_results,  # type: ignore[arg-type]  # int: integer=True
                           min_score=min_score, sources=sources,
                           on_hits=recall_recorder(index) if record else None)
    except StoreError as e:
        return unavailable_result(str(e), damaged=isinstance(e, IndexUnavailable))
    except EmbeddingError as e:
        return unavailable_result(str(e))
    except Exception as e:  # the tool answers whatever happened inside; the model reads it
        return {"results": [], "error": f"internal error: {type(e).__name__}: {e}"}
    return {"results": tool_results(res.hits), "provider": index.choice.id,
            "model": index.choice.model, "mode": res.mode, "fallback": index.fallback,
            "citations": "on"}


def tool_results(hits: Sequence[Hit]) -> list[dict[str, Any]]:
    """Hits in the tool's result shape: re-sorted by score (ties by path), each snippet ending
    in its ``Source:`` citation, as the reference's tool returns them (any backend's hits)."""
    out: list[dict[str, Any]] = []
    for h in sorted(hits, key=lambda h: (-h.score, h.path)):
        item = h.to_result()
        item["snippet"] = f"{h.snippet.strip()}\n\nSource: {h.citation}"
        # the input's vocabulary: a transcript hit belongs to corpus "sessions"
        item["corpus"] = "sessions" if h.source == "sessions" else "memory"
        out.append(item)
    return out


def memory_get(index: MemoryIndex, path: object, from_: object = None,
               lines: object = None) -> dict[str, Any]:
    """Read lines; any refusal or bad argument comes back as ``{path, text: "", disabled: true,
    error}`` (the reference's shape), never as an exception."""
    shown = path if isinstance(path, str) else ""
    try:
        rel = _text(path, "path")
        start = _number(from_, "from", integer=True)
        count = _number(lines, "lines", integer=True)
        return index.get(rel, start, count).to_dict()  # type: ignore[arg-type]  # ints
    except (_BadArgument, PathRefused, OSError, StoreError) as e:
        error = str(e)
    except Exception as e:  # the tool answers whatever happened inside; the model reads it
        error = f"internal error: {type(e).__name__}: {e}"
    return {"path": shown, "text": "", "disabled": True, "error": error}
