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
from ..backends import MemoryBackend
from ..base.sql import StoreError
from ..live import LiveIndex, LiveUnavailable
from ..tools import GET_SCHEMA, SEARCH_SCHEMA, STATUS_SCHEMA, BadArgument, check_arguments

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


@dataclass
class MemoryTools:
    """The tools of one live workspace, answered by its backend (the one door)."""

    live: LiveIndex
    #: The backend (``memory_core.backends``) the server was opened with: the builtin engine
    #: (reading the live index) or qmd with its fallback.
    backend: MemoryBackend
    record_recalls: bool = True
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
        except StoreError as e:  # its message is one line that says why (as the CLI's)
            return _error(str(e))
        except Exception as e:  # the tool must answer, whatever happened inside
            return _error(f"internal error: {type(e).__name__}: {e}")

    def _answering(self) -> MemoryBackend:
        """The backend, told when the live index saw the files change since the last call
        (qmd updates its own index, debounced as the reference's watcher makes it dirty;
        builtin's is the live index), answering through the live index."""
        generation = self.live.status().generation
        if generation != self._backend_generation:
            self.backend.files_changed()
            self._backend_generation = generation
        return self.backend.over(self.live.search_index)

    def search(self, args: Mapping[str, Any]) -> Outcome:
        a = check_arguments(args, SEARCH_SCHEMA)
        backend = self._answering()
        on_hits = None
        if self.record_recalls:
            from ..promotion import recall_recorder

            on_hits = recall_recorder(self.live.search_index())
        out = tools.backend_search(backend, a, self.live.config.settings().citations,
                                   on_hits=on_hits)
        st = self.live.status()
        out["index"] = {"generation": st.generation, "dirty": st.dirty,
                        "behindMs": st.behind_ms, "lastSyncAt": st.last_sync_at}
        return out, bool(out.get("unavailable") or out.get("error"))

    def get(self, args: Mapping[str, Any]) -> Outcome:
        a = check_arguments(args, GET_SCHEMA)
        out = tools.backend_get(self._answering(), a)
        return out, bool(out.get("disabled") or out.get("error"))

    def status(self, args: Mapping[str, Any]) -> Outcome:
        check_arguments(args, STATUS_SCHEMA)
        out = self._answering().status().to_json()
        out["live"] = self.live.status().to_json()
        return out, False
