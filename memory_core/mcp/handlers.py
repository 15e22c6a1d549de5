"""The three MCP tools as plain functions: validate the arguments, run, shape the result.

Kept apart from the transport so that the rules (what a bad argument is, what an error result
looks like) are one piece of code, tested directly and through real clients. Every function
returns ``(payload, is_error)`` and never raises: a model reads an error result and corrects
its call; a crashed server helps nobody.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import tools
from ..backends import ENGINE, OWN_INDEX, MemoryBackend
from ..live import LiveIndex, LiveUnavailable
from ..query import MAX_QUERY_TERMS
from ..reading import PathRefused
from ..tools import GET_SCHEMA, SEARCH_SCHEMA, STATUS_SCHEMA, BadArgument, check_arguments

#: A query over this many UTF-8 bytes, or over :data:`~memory_core.query.MAX_QUERY_TERMS`
#: terms, is refused before any work: the reference sets no limit, and a 650 KB query of 100k
#: words held the index for over a minute (the CLI's ``search`` cuts at the same terms).
MAX_QUERY_BYTES = 8 * 1024
Payload = dict[str, Any]
Outcome = tuple[Payload, bool]

SEARCH_DESCRIPTION = (
    "Search the agent's long-term memory: MEMORY.md, the dated diaries memory/YYYY-MM-DD.md, "
    "notes, and past session transcripts. Call it BEFORE answering anything about prior work, "
    "decisions, dates, people, preferences, todos or facts learned in earlier sessions, and "
    "whenever the user refers to something you should remember. Works for exact identifiers "
    "(error codes, ticket numbers, config keys), paraphrases and Chinese. Returns up to "
    "maxResults snippets (default 6), best first, each with path, startLine, endLine, score, "
    "corpus ('memory' or 'sessions') and (unless citations are off) a 'Source: path#Lx-Ly' "
    "citation (a snippet starting with '…' starts inside a line); then call memory_get with "
    "that path and lines for the exact text. An empty results list (no error) means nothing "
    "relevant is stored: say so rather than guess.")
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


def _error(message: str, **extra: Any) -> Outcome:
    return {"error": message, **extra}, True


def _capped(query: str) -> str:
    """``query``, refused when it exceeds :data:`MAX_QUERY_BYTES` or :data:`MAX_QUERY_TERMS`
    (the size is checked first: it costs nothing)."""
    size = len(query.encode("utf-8", "surrogatepass"))
    if size > MAX_QUERY_BYTES:
        raise BadArgument(f"'query' is {size} bytes; at most {MAX_QUERY_BYTES} are searched "
                          "(ask with the words that matter)")
    terms = len(query.split())
    if terms > MAX_QUERY_TERMS:
        raise BadArgument(f"'query' has {terms} terms; at most {MAX_QUERY_TERMS} are searched "
                          "(ask with the words that matter)")
    return query


@dataclass
class MemoryTools:
    """The tools of one live workspace."""

    live: LiveIndex
    record_recalls: bool = True
    #: The backend (``memory_core.backends``) the server was opened with; one that is not
    #: the builtin :data:`~memory_core.backends.ENGINE` (``--backend qmd``) answers instead of
    #: the live index. ``None``: the builtin engine, through ``live``.
    backend: MemoryBackend | None = None
    _backend_generation: int = field(default=-1, init=False, repr=False)

    def _other(self) -> MemoryBackend | None:
        """The backend answering in place of the live index's builtin engine, if any."""
        b = self.backend
        return b if b and ENGINE not in b.capabilities else None

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
        a = check_arguments(args, SEARCH_SCHEMA)
        query, max_results, min_score = _capped(a["query"]), a.get("maxResults"), a.get("minScore")
        corpus = a.get("corpus")
        other = self._other()
        if other:
            return self._backend_search(other, query, max_results, min_score, corpus)
        index = self.live.search_index()
        out = tools.memory_search(index, query, max_results, min_score, corpus,
                                  record=self.record_recalls)
        st = self.live.status()
        out["index"] = {"generation": st.generation, "dirty": st.dirty,
                        "behindMs": st.behind_ms, "lastSyncAt": st.last_sync_at}
        return out, bool(out.get("unavailable") or out.get("error"))

    def get(self, args: Mapping[str, Any]) -> Outcome:
        a = check_arguments(args, GET_SCHEMA)
        path, start, lines = a["path"], a.get("from"), a.get("lines")
        other = self._other()
        if other:
            try:
                out = other.get(path, start, lines).to_dict()
            except PathRefused as e:
                out = {"path": path, "text": "", "disabled": True, "error": str(e)}
            return out, bool(out.get("disabled") or out.get("error"))
        out = tools.memory_get(self.live.search_index(), path, start, lines)
        return out, bool(out.get("disabled") or out.get("error"))

    def status(self, args: Mapping[str, Any]) -> Outcome:
        check_arguments(args, STATUS_SCHEMA)
        other = self._other()
        out = (other.status() if other else self.live.search_index().status()).to_json()
        out["live"] = self.live.status().to_json()
        return out, False

    def _backend_search(self, backend: MemoryBackend, query: str, max_results: int | None,
                        min_score: float | None, corpus: str | None) -> Outcome:
        """``memory_search`` through the backend, in the builtin tool's shape.

        qmd is updated (debounced, as the reference's watcher makes it dirty) whenever the live
        index saw the files change since its last update.
        """
        generation = self.live.status().generation
        if generation != self._backend_generation and OWN_INDEX in backend.capabilities:
            backend.sync()
            self._backend_generation = generation
        on_hits = None
        if self.record_recalls:
            from ..promotion import recall_recorder

            on_hits = recall_recorder(self.live.search_index())
        res = backend.search(query, max_results=max_results, min_score=min_score,
                             sources=None if corpus in (None, "all") else [corpus],
                             on_hits=on_hits)
        mode = self.live.config.settings().citations
        out: Payload = {"results": tools.tool_results(res.hits, tools.citations_included(mode)),
                        "backend": res.backend, "mode": res.mode, "citations": mode}
        if res.fallback is not None:
            out["fallback"] = res.fallback.to_json()
        return out, False
