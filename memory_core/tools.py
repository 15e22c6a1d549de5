"""The agent tools: ``memory_search`` and ``memory_get`` in the reference's shapes (§4.8, §5).

An agent framework registers these two functions (or wraps them as MCP tools); both return plain
JSON-ready dicts and never raise for bad input: errors come back in the result, as the reference's
tools do, so the model can read them.
"""

from __future__ import annotations

from typing import Any

from .embeddings import EmbeddingError
from .index import MemoryIndex
from .promotion import recall_recorder
from .reading import PathRefused
from .store import StoreError

MEMORY_SEARCH_SCHEMA: dict[str, Any] = {
    "name": "memory_search",
    "description": "Search the agent's long-term memory (MEMORY.md, dated diaries, notes, past "
                   "sessions) before answering questions about prior work, decisions, dates, "
                   "people, preferences or todos. Returns snippets with path and line range.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "maxResults": {"type": "integer"},
        "minScore": {"type": "number"},
        "corpus": {"type": "string", "enum": ["memory", "sessions", "all"]}},
        "required": ["query"]},
}
MEMORY_GET_SCHEMA: dict[str, Any] = {
    "name": "memory_get",
    "description": "Read exact lines of a memory file found by memory_search.",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "from": {"type": "integer"}, "lines": {"type": "integer"}},
        "required": ["path"]},
}


def memory_search(index: MemoryIndex, query: str, maxResults: int | None = None,
                  minScore: float | None = None, corpus: str | None = None,
                  record: bool = True) -> dict[str, Any]:
    """Search; results re-sorted by score (ties by path) as the reference's tool does.

    Hits on dated diaries are recorded as recalls for promotion unless ``record`` is False.
    """
    sources = None if corpus in (None, "all") else [corpus]
    try:
        res = index.search(query, max_results=maxResults, min_score=minScore, sources=sources,
                           on_hits=recall_recorder(index) if record else None)
    except (EmbeddingError, StoreError) as e:
        return {"results": [], "disabled": True, "unavailable": True, "error": str(e),
                "action": "Run `memory-core status` to see what is wrong."}
    hits = sorted(res.hits, key=lambda h: (-h.score, h.path))
    out: list[dict[str, Any]] = []
    for h in hits:
        item = h.to_result()
        item["snippet"] = f"{h.snippet.strip()}\n\nSource: {h.citation}"
        item["corpus"] = "memory"
        out.append(item)
    return {"results": out, "provider": index.choice.id, "model": index.choice.model,
            "mode": res.mode, "fallback": index.fallback, "citations": "on"}


def memory_get(index: MemoryIndex, path: str, from_: int | None = None,
               lines: int | None = None) -> dict[str, Any]:
    """Read lines; a refused path comes back as ``{disabled: true, error}``."""
    try:
        return index.get(path, from_, lines).to_dict()
    except PathRefused as e:
        return {"path": path, "text": "", "disabled": True, "error": str(e)}
