"""The three MCP tools as plain functions: validate the arguments, run, shape the result.

Kept apart from the transport so that the rules (what a bad argument is, what an error result
looks like) are one piece of code, tested directly and through real clients. Every function
returns ``(payload, is_error)`` and never raises: a model reads an error result and corrects
its call; a crashed server helps nobody.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import tools
from ..live import LiveIndex, LiveUnavailable
from ..reading import PathRefused

#: ``maxResults`` above this is refused (the reference's candidate pool is 200).
MAX_RESULTS_CAP = 100
Payload = dict[str, Any]
Outcome = tuple[Payload, bool]

SEARCH_DESCRIPTION = (
    "Search the agent's long-term memory: MEMORY.md, the dated diaries memory/YYYY-MM-DD.md, "
    "notes, and past session transcripts. Call it BEFORE answering anything about prior work, "
    "decisions, dates, people, preferences, todos or facts learned in earlier sessions, and "
    "whenever the user refers to something you should remember. Works for exact identifiers "
    "(error codes, ticket numbers, config keys), paraphrases and Chinese. Returns up to "
    "maxResults snippets (default 6), best first, each with path, startLine, endLine, score, "
    "corpus ('memory' or 'sessions') and a 'Source: path#Lx-Ly' citation (a snippet starting "
    "with '…' starts inside a line); then call memory_get with that path and lines for the "
    "exact text, and cite the Source line in your answer. An empty results list (no error) "
    "means nothing relevant is stored: say so rather than guess.")
GET_DESCRIPTION = (
    "Read exact lines of a memory file, usually one that memory_search returned: pass its "
    "path and startLine as 'from' (1-based) and how many 'lines' to read (default 120; "
    "endLine - startLine + 1 reads the cited range). Markdown memory files (MEMORY.md, "
    "memory/**/*.md, configured extra paths) and the session transcripts memory_search cites "
    "(sessions/….jsonl: their rendered User/Assistant messages, 'from' and 'lines' counting "
    "the JSONL lines of the citation) can be read; anything else is refused with an error. A "
    "long read is truncated with a 'nextFrom' line number to continue from. Empty text means "
    "the Markdown file is missing or has no lines there.")
STATUS_DESCRIPTION = (
    "Report the state of the memory index: how many files and chunks it holds, the embedding "
    "provider and search mode, whether it is up to date with the files (dirty, behindMs, "
    "pending transcript bytes/messages), the index generation and the last sync. Call it when "
    "memory_search returns nothing you expected, to see whether indexing is still catching up.")

SEARCH_SCHEMA: Payload = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look for: words, an identifier, "
                  "or a question"},
        "maxResults": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS_CAP,
                       "description": "how many snippets at most (default 6)"},
        "minScore": {"type": "number", "minimum": 0, "maximum": 1,
                     "description": "drop hits scoring below this (default: the profile's)"},
        "corpus": {"type": "string", "enum": ["memory", "sessions", "all"],
                   "description": "memory files only, session transcripts only, or all "
                   "(default)"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
GET_SCHEMA: Payload = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "workspace-relative path, e.g. "
                 "memory/2026-11-03.md"},
        "from": {"type": "integer", "minimum": 1, "description": "first line, 1-based "
                 "(default 1)"},
        "lines": {"type": "integer", "minimum": 1, "description": "how many lines (default "
                  "120)"},
    },
    "required": ["path"],
    "additionalProperties": False,
}
STATUS_SCHEMA: Payload = {"type": "object", "properties": {}, "additionalProperties": False}


class BadArgument(ValueError):
    """A tool argument the caller must fix; the message names it and says what is expected."""


def _error(message: str, **extra: Any) -> Outcome:
    return {"error": message, **extra}, True


def _check_keys(args: Mapping[str, Any], schema: Payload) -> None:
    unknown = sorted(set(args) - set(schema["properties"]))
    if unknown:
        raise BadArgument(f"unknown argument(s) {', '.join(map(repr, unknown))}; expected "
                          f"{', '.join(schema['properties'])}")
    for key in schema.get("required", ()):
        if args.get(key) is None:
            raise BadArgument(f"'{key}' is required")


def _int(args: Mapping[str, Any], key: str, lo: int, hi: int | None = None) -> int | None:
    v = args.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise BadArgument(f"'{key}' must be an integer, got {type(v).__name__} {v!r:.40}")
    if isinstance(v, float):
        if not math.isfinite(v) or not v.is_integer():
            raise BadArgument(f"'{key}' must be an integer, got {v!r}")
        v = int(v)
    if v < lo or (hi is not None and v > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise BadArgument(f"'{key}' must be {bound}, got {v}")
    return v


def _text(args: Mapping[str, Any], key: str) -> str:
    v = args.get(key)
    if not isinstance(v, str):
        raise BadArgument(f"'{key}' must be a string, got {type(v).__name__}")
    if "\x00" in v:
        raise BadArgument(f"'{key}' must not contain NUL characters")
    return v


@dataclass
class MemoryTools:
    """The tools of one live workspace."""

    live: LiveIndex
    record_recalls: bool = True
    #: A ``memory_core.backends`` backend (``--backend qmd``) answering instead of the live
    #: index; ``None``: the builtin engine through ``live``.
    backend: Any = None
    _backend_generation: int = field(default=-1, init=False, repr=False)

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> Outcome:
        """Run tool ``name``; never raises."""
        handlers: dict[str, Callable[[Mapping[str, Any]], Outcome]] = {
            "memory_search": self.search, "memory_get": self.get, "memory_status": self.status}
        handler = handlers.get(name)
        if handler is None:
            return _error(f"unknown tool {name!r}; available: {', '.join(handlers)}")
        if arguments is not None and not isinstance(arguments, Mapping):
            return _error("arguments must be an object")
        try:
            return handler(arguments or {})
        except BadArgument as e:
            return _error(f"bad argument: {e}")
        except LiveUnavailable as e:
            return _error(str(e), results=[], disabled=True, unavailable=True)
        except Exception as e:  # the tool must answer, whatever happened inside
            return _error(f"internal error: {type(e).__name__}: {e}")

    def search(self, args: Mapping[str, Any]) -> Outcome:
        _check_keys(args, SEARCH_SCHEMA)
        query = _text(args, "query")
        max_results = _int(args, "maxResults", 1, MAX_RESULTS_CAP)
        min_score = args.get("minScore")
        if min_score is not None:
            if isinstance(min_score, bool) or not isinstance(min_score, int | float) or \
                    not math.isfinite(min_score):
                raise BadArgument(f"'minScore' must be a number between 0 and 1, got "
                                  f"{min_score!r:.40}")
            min_score = min(1.0, max(0.0, float(min_score)))  # clamped, as the reference does
        corpus = args.get("corpus")
        if corpus is not None and corpus not in ("memory", "sessions", "all"):
            raise BadArgument(f"'corpus' must be one of memory, sessions, all; got {corpus!r:.40}")
        if not query.strip():
            return {"results": [], "note": "empty query"}, False
        if self.backend is not None:
            return self._backend_search(query, max_results, min_score, corpus)
        index = self.live.search_index()
        out = tools.memory_search(index, query, max_results, min_score, corpus,
                                  record=self.record_recalls)
        st = self.live.status()
        out["index"] = {"generation": st.generation, "dirty": st.dirty,
                        "behindMs": st.behind_ms, "lastSyncAt": st.last_sync_at}
        return out, bool(out.get("unavailable") or out.get("error"))

    def get(self, args: Mapping[str, Any]) -> Outcome:
        _check_keys(args, GET_SCHEMA)
        path = _text(args, "path").strip()
        if not path:
            raise BadArgument("'path' must not be empty")
        start = _int(args, "from", 1)
        lines = _int(args, "lines", 1)
        if self.backend is not None:
            try:
                out = self.backend.get(path, start, lines).to_dict()
            except PathRefused as e:
                out = {"path": path, "text": "", "disabled": True, "error": str(e)}
            return out, bool(out.get("disabled") or out.get("error"))
        out = tools.memory_get(self.live.search_index(), path, start, lines)
        return out, bool(out.get("disabled") or out.get("error"))

    def status(self, args: Mapping[str, Any]) -> Outcome:
        _check_keys(args, STATUS_SCHEMA)
        st: Any = (self.backend.status() if self.backend is not None
                   else self.live.search_index().status())
        out = st.to_json() if hasattr(st, "to_json") else dict(st)
        out["live"] = self.live.status().to_json()
        return out, False

    def _backend_search(self, query: str, max_results: int | None, min_score: float | None,
                        corpus: str | None) -> Outcome:
        """``memory_search`` through the backend, in the builtin tool's shape.

        qmd is updated (debounced, as the reference's watcher makes it dirty) whenever the live
        index saw the files change since its last update.
        """
        backend = self.backend
        generation = self.live.status().generation
        if generation != self._backend_generation and hasattr(backend, "primary"):
            backend.sync()
            self._backend_generation = generation
        on_hits = None
        if self.record_recalls:
            from ..promotion import recall_recorder

            on_hits = recall_recorder(self.live.search_index())
        res = backend.search(query, max_results=max_results, min_score=min_score,
                             sources=None if corpus in (None, "all") else [corpus],
                             on_hits=on_hits)
        out: Payload = {"results": tools.tool_results(res.hits), "backend": res.backend,
                        "mode": res.mode, "citations": "on"}
        if res.fallback is not None:
            out["fallback"] = res.fallback.to_json()
        return out, False
