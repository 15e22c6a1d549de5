"""A remote provider embeds a query while the keyword leg runs (issue #26 item 0, ``search
--batch``'s marginal query): the answers, the requests and the errors are those of the serial
path. Real engine, real OpenAI-compatible server on 127.0.0.1 (MiniLM vectors).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryIndex

from .embed_server import EmbedServer

QUERIES = ["COOKIE_EXPIRED", "which port does PgBouncer listen on",
           "when was the computer overheating?", "HTTP 429 Retry-After backoff"]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbedServer]:
    with EmbedServer() as s:
        yield s


def answers(idx: MemoryIndex, overlap: bool) -> list[Any]:
    """Each query's hits (or its error), with the provider overlapping or not."""
    provider: Any = idx.choice.provider
    provider.waits_on_network = overlap  # the provider's own switch, as a subclass would set
    out: list[Any] = []
    for q in QUERIES:
        try:
            res = idx.search(q)
            out.append([(h.path, h.start_line, h.end_line, round(h.score, 6), h.via)
                        for h in res.hits] + ([("note", res.note)] if res.note else []))
        except Exception as e:  # the error is part of the behaviour compared
            out.append((type(e).__name__, str(e)))
    return out


def test_overlapped_query_embedding_answers_as_the_serial_path(demo_ws: Path,
                                                               server: EmbedServer) -> None:
    ov = {"provider": {"provider": "openai", "base_url": server.base_url, "model": "minilm",
                       "fallback": []}}
    with MemoryIndex.open(demo_ws, overrides=ov) as idx:
        idx.sync()
        assert getattr(idx.choice.provider, "waits_on_network", False)  # on for remote
        server.reset()
        overlapped = answers(idx, True)
        n_overlapped = len(server.requests)
        server.reset()
        serial = answers(idx, False)
        assert overlapped == serial
        assert n_overlapped == len(server.requests) == len(QUERIES)  # one request a query
        assert any(hits and hits[0][4] == "vector" for hits in serial)  # vectors were used
        # a provider error surfaces the same way in both: the keyword leg answers, with a note
        server.always_fail(400, "no such model")
        failed = answers(idx, True)
        assert failed == answers(idx, False)
        assert all(a[-1][0] == "note" and "no such model" in a[-1][1] for a in failed)
        server.always_fail(None)
