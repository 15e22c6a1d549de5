"""The MCP tools' output schemas: the structured content a successful call returns.

A client that validates can trust the shape. Each schema types the fields and requires those a
successful result always has, or else ``error`` (an error result, ``isError``, says what went
wrong; some clients validate those too, e.g. the MCP Inspector). Further fields are allowed, so
a newer server (an abstention reason, say) does not break an older client's validation.
"""

from __future__ import annotations

from typing import Any

from ..base.config import SOURCE_NAMES

Schema = dict[str, Any]

_INT_OR_NULL: Schema = {"type": ["integer", "null"]}
_ERROR: Schema = {"type": "string", "description": "what went wrong (an error result)"}


def _or_error(*required: str) -> list[Schema]:
    """A successful result has ``required``; an error result has ``error``."""
    return [{"required": list(required)}, {"required": ["error"]}]

SEARCH_RESULT_ITEM: Schema = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "workspace-relative file path"},
        "startLine": {"type": "integer", "description": "first line cited (1-based; JSONL "
                      "line for a transcript)"},
        "endLine": {"type": "integer"},
        "score": {"type": "number"},
        "snippet": {"type": "string", "description": "the chunk's text, ending in its "
                    "'Source: path#Lx-Ly' line; a leading '…' means it starts inside a line"},
        "source": {"type": "string", "enum": list(SOURCE_NAMES)},
        "corpus": {"type": "string", "enum": list(SOURCE_NAMES),
                   "description": "the memory_search corpus this hit belongs to"},
        "citation": {"type": "string"},
        "vectorScore": {"type": "number"},
        "textScore": {"type": "number"},
        "supersededBy": {"type": "string", "description": "'path#Ln' of a later line that "
                         "states another value for what this hit states: prefer it for the "
                         "present, keep this one for the past"},
    },
    "required": ["path", "startLine", "endLine", "score", "snippet", "source", "corpus"],
}

SEARCH_OUTPUT_SCHEMA: Schema = {
    "type": "object",
    "properties": {
        "results": {"type": "array", "items": SEARCH_RESULT_ITEM,
                    "description": "best first; empty when nothing relevant is stored"},
        "provider": {"type": "string"},
        "model": {"type": "string"},
        "mode": {"type": "string"},
        "citations": {"type": "string"},
        "backend": {"type": "string"},
        "fallback": {"type": ["object", "null"]},
        "note": {"type": "string"},
        "index": {"type": "object", "properties": {
            "generation": {"type": "integer"}, "dirty": {"type": "boolean"},
            "behindMs": _INT_OR_NULL, "lastSyncAt": _INT_OR_NULL}},
        "error": _ERROR,
    },
    "anyOf": _or_error("results"),
}

GET_OUTPUT_SCHEMA: Schema = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "text": {"type": "string", "description": "the lines read; empty for a missing "
                 "Markdown file or lines past its end"},
        "from": {"type": "integer"},
        "lines": {"type": "integer"},
        "truncated": {"type": "boolean"},
        "nextFrom": {"type": "integer", "description": "the line to continue from"},
        "source": {"type": "string", "enum": ["sessions"], "description": "present for a "
                   "transcript: text is its rendered messages, from/lines count JSONL lines"},
        "disabled": {"type": "boolean", "description": "true when the read was refused"},
        "error": _ERROR,
    },
    "anyOf": _or_error("path", "text", "from", "lines"),
}

STATUS_OUTPUT_SCHEMA: Schema = {
    "type": "object",
    "properties": {
        "backend": {"type": "string"},
        "indexed": {"type": "boolean"},
        "files": {"type": "integer"},
        "chunks": {"type": "integer"},
        "dirty": {"type": "boolean"},
        "generation": {"type": "integer"},
        "live": {"type": "object", "properties": {
            "dirty": {"type": "boolean"}, "behindMs": _INT_OR_NULL,
            "generation": {"type": "integer"}}},
        "error": _ERROR,
    },
    "anyOf": _or_error("live"),
}
