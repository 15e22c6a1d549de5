"""The agent tools: ``memory_search`` and ``memory_get`` in the reference's shapes (§4.8, §5).

An agent framework registers these two functions (or wraps them as MCP tools); both return plain
JSON-ready dicts and never raise for bad input: errors come back in the result, as the reference's
tools do, so the model can read them.

The tools' arguments have one rule, their JSON schema (:data:`SEARCH_SCHEMA`, :data:`GET_SCHEMA`,
:data:`STATUS_SCHEMA`, the MCP server's ``inputSchema`` too): :func:`check_arguments` checks a
call against it, here and in :mod:`memory_core.mcp`. The bounds of ``maxResults`` and
``minScore`` come from the settings' declaration (:func:`memory_core.base.config.setting_meta`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .backends.builtin import BuiltinBackend
from .base.config import SOURCE_NAMES, SearchSettings, setting_meta
from .embeddings import EmbeddingError
from .index import MemoryIndex
from .promotion import recall_recorder
from .read.fusion import Hit
from .read.reading import PathRefused
from .storage.store import IndexUnavailable, StoreError

if TYPE_CHECKING:
    from .backends.protocol import MemoryBackend, OnHits

#: The ``corpus`` values this workspace can answer (no wiki supplements here).
CORPORA = (*SOURCE_NAMES, "all")


def _setting_bounds(name: str) -> dict[str, Any]:
    meta = setting_meta(SearchSettings, name)
    return {k: meta[j] for j, k in (("ge", "minimum"), ("le", "maximum")) if j in meta}


SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look for: words, an identifier, "
                  "or a question"},
        "maxResults": {"type": "integer", **_setting_bounds("max_results"),
                       "description": "how many snippets at most (default 6)"},
        "minScore": {"type": "number", **_setting_bounds("min_score"),
                     "description": "drop hits scoring below this (default: the profile's)"},
        "corpus": {"type": "string", "enum": list(CORPORA),
                   "description": "memory files only, session transcripts only, or all "
                   "(default)"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
GET_SCHEMA: dict[str, Any] = {
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
STATUS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {},
                                 "additionalProperties": False}


class BadArgument(ValueError):
    """A tool argument the caller must fix; the message names it and says what is expected."""


def check_arguments(args: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` checked against ``schema`` (the subset our schemas use: ``type`` string,
    integer or number, ``minimum``/``maximum``, ``enum``, ``required``, no other key).

    Returns the given arguments (``None`` is "not given"), strings trimmed; raises
    :class:`BadArgument` naming the first argument that breaks the schema. JSON has one number
    type, so ``5.0`` is the integer 5; ``"5"``, ``2.5`` and ``true`` are not integers.
    """
    props: Mapping[str, Any] = schema["properties"]
    unknown = sorted(set(args) - set(props))
    if unknown:
        raise BadArgument(f"unknown argument(s) {', '.join(map(repr, unknown))}; expected "
                          f"{', '.join(props) or 'none'}")
    out: dict[str, Any] = {}
    for key, spec in props.items():
        value = args.get(key)
        blank = value is None or (isinstance(value, str) and not value.strip())
        if key in schema.get("required", ()) and (blank or not isinstance(value, str)):
            got = ("nothing" if value is None else "an empty string" if blank
                   else _shown(value))
            raise BadArgument(f"{key} required: a non-empty string (got {got})")
        if not blank:
            out[key] = _checked(key, value, spec)
    return out


def _checked(key: str, value: Any, spec: Mapping[str, Any]) -> Any:
    kind = spec["type"]
    if "enum" in spec and value not in spec["enum"]:
        raise BadArgument(f"{key} must be one of {', '.join(spec['enum'])} "
                          f"(got {_shown(value)})")
    if kind == "string":
        if not isinstance(value, str):
            raise BadArgument(f"{key} must be a string (got {_shown(value)})")
        if "\x00" in value:
            raise BadArgument(f"{key} must not contain NUL characters")
        return value.strip()
    noun = "an integer" if kind == "integer" else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadArgument(f"{key} must be {noun} (got {_shown(value)})")
    if not math.isfinite(value):
        raise BadArgument(f"{key} must be a finite number (got {value!r})")
    if kind == "integer":
        if not float(value).is_integer():
            raise BadArgument(f"{key} must be an integer (got {value!r})")
        value = int(value)
    else:
        value = float(value)
    lo, hi = spec.get("minimum"), spec.get("maximum")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        bound = (f"between {lo} and {hi}" if lo is not None and hi is not None
                 else f"at least {lo}" if lo is not None else f"at most {hi}")
        raise BadArgument(f"{key} must be {bound} (got {value!r})")
    return value


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return f"{type(value).__name__} {value!r:.40}"


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
                  record: bool = True, session_key: str | None = None) -> dict[str, Any]:
    """Search; results re-sorted by score (ties by path) as the reference's tool does.

    Hits on dated diaries are recorded as recalls for promotion unless ``record`` is False.
    ``[search] citations`` and ``session_key`` decide the ``Source:`` lines
    (:func:`citations_included`). An over-long query is cut by :meth:`MemoryIndex.search`, and
    ``note`` says so. Never raises: an argument that breaks :data:`SEARCH_SCHEMA` gives
    ``{results: [], error}``; an index or provider that cannot answer gives the reference's
    unavailable result (``unavailable: true`` and why).
    """
    try:
        args = check_arguments({"query": query, "maxResults": maxResults, "minScore": minScore,
                                "corpus": corpus}, SEARCH_SCHEMA)
    except BadArgument as e:
        return {"results": [], "error": str(e)}
    return backend_search(BuiltinBackend(index), args, index.config.settings().citations,
                          on_hits=recall_recorder(index) if record else None,
                          session_key=session_key)


def backend_search(backend: MemoryBackend, args: Mapping[str, Any], citations: str, *,
                   on_hits: OnHits | None = None, session_key: str | None = None
                   ) -> dict[str, Any]:
    """``memory_search`` through any backend, with ``args`` already checked
    (:func:`check_arguments`): the tool's shape, whichever backend answered (the MCP server's
    door). Never raises (see :func:`memory_search`)."""
    where = args.get("corpus", "all")
    try:
        res = backend.search(args["query"], max_results=args.get("maxResults"),
                             min_score=args.get("minScore"),
                             sources=None if where == "all" else [where], on_hits=on_hits)
    except StoreError as e:
        return unavailable_result(str(e), damaged=isinstance(e, IndexUnavailable))
    except EmbeddingError as e:
        return unavailable_result(str(e))
    except Exception as e:  # the tool answers whatever happened inside; the model reads it
        return {"results": [], "error": f"internal error: {type(e).__name__}: {e}"}
    # the reference's key order (results, provider, model, mode, fallback, citations), then ours
    extra: dict[str, Any] = dict(res.extra)
    results = tool_results(res.hits, citations_included(citations, session_key))
    out: dict[str, Any] = {"results": results,
                           **{k: extra.pop(k) for k in ("provider", "model") if k in extra},
                           "mode": res.mode, **extra, "citations": citations,
                           "backend": res.backend}
    if res.fallback is not None:
        out["fallback"] = res.fallback.to_json()
    if res.detail is not None and res.detail.abstention:
        # an empty result says why: nothing relevant, and on what evidence
        out["debug"] = {"abstained": res.detail.abstention}
    if res.note:  # a cut query, or the provider was down (keyword leg alone)
        out["note"] = res.note
    return out


def citations_included(mode: str, session_key: str | None = None) -> bool:
    """Whether snippets carry their ``Source:`` line (the reference's shouldIncludeCitations).

    ``on``/``off`` decide alone; ``auto`` includes them in direct chats only: a session key
    ``agent:<id>:<rest>`` whose rest has a ``channel`` or ``group`` token is not direct; no key
    (the MCP server, the CLI) is direct.
    """
    if mode == "on":
        return True
    if mode == "off":
        return False
    parts = (session_key or "").strip().split(":")
    if len(parts) < 3 or parts[0].lower() != "agent" or not parts[1]:
        return True
    tokens = {t for t in ":".join(parts[2:]).lower().split(":") if t}
    return not tokens & {"channel", "group"}


def tool_results(hits: Sequence[Hit], citations: bool = True) -> list[dict[str, Any]]:
    """Hits in the tool's result shape: re-sorted by score (ties by path), each snippet ending
    in its ``Source:`` citation when ``citations`` (the reference's decorateCitations; without
    them the item has no ``citation`` either), for any backend's hits."""
    out: list[dict[str, Any]] = []
    for h in sorted(hits, key=lambda h: (-h.score, h.path)):
        item = h.to_result()
        if citations:
            item["snippet"] = f"{h.snippet.strip()}\n\nSource: {h.citation}"
        else:
            item.pop("citation", None)
        # the input's vocabulary: a transcript hit belongs to corpus "sessions"
        item["corpus"] = "sessions" if h.source == "sessions" else "memory"
        out.append(item)
    return out


def memory_instructions(citations: str) -> str:
    """The reference's "Memory Recall" guidance for an agent (its prompt section, §4.8): search
    before answering about the past, read only the lines needed; the sentence on citing
    ``Source:`` lines only when citations are not off."""
    text = ("## Memory Recall\nThis server is the agent's long-term memory. Before answering "
            "anything about prior work, decisions, dates, people, preferences or todos, run "
            "memory_search; then use memory_get to read only the lines you need. If nothing "
            "relevant turns up, say that you checked.")
    if citations == "off":
        return text + ("\nCitations are off: do not mention file paths or line numbers unless "
                       "the user asks for them.")
    return text + "\nCite the 'Source: path#line' of the memory you used."


def memory_get(index: MemoryIndex, path: object, from_: object = None,
               lines: object = None) -> dict[str, Any]:
    """Read lines; any refusal or an argument that breaks :data:`GET_SCHEMA` comes back as
    ``{path, text: "", disabled: true, error}`` (the reference's shape), never as an exception."""
    try:
        args = check_arguments({"path": path, "from": from_, "lines": lines}, GET_SCHEMA)
    except BadArgument as e:
        return {"path": path if isinstance(path, str) else "", "text": "", "disabled": True,
                "error": str(e)}
    return backend_get(BuiltinBackend(index), args)


def backend_get(backend: MemoryBackend, args: Mapping[str, Any]) -> dict[str, Any]:
    """``memory_get`` through any backend, with ``args`` already checked; never raises."""
    try:
        return backend.get(args["path"], args.get("from"), args.get("lines")).to_dict()
    except (PathRefused, OSError, StoreError) as e:
        error = str(e)
    except Exception as e:  # the tool answers whatever happened inside; the model reads it
        error = f"internal error: {type(e).__name__}: {e}"
    return {"path": args["path"], "text": "", "disabled": True, "error": error}
