"""The agent's real queries: ``memory_search`` calls mined from its session transcripts.

An OpenClaw transcript (JSONL) records each assistant turn as a ``message`` whose content holds
``toolCall`` blocks (``{type: "toolCall", id, name, arguments}``) next to text and thinking
blocks, and each tool's answer as a later ``message`` of role ``toolResult`` carrying the same
``toolCallId`` and, as text content, the JSON the tool returned (``jsonResult``: ``{results:
[{path, startLine, endLine, score, snippet, source, citation?}], provider, model, …}`` or
``{results: [], disabled: true, error}``). :func:`mine_transcript` pairs them by
``toolCallId`` within a file; :func:`mine_queries` does it for every transcript of a listing.

Snippets in a tool result may carry the citation the tool appends when citations are on
(``"<snippet>\\n\\nSource: <path>#L<a>-L<b>"``, ``decorateCitations``); the reference records
recalls from the undecorated result, so :attr:`RealQuery.results_then` gives the snippet without
it (the decorated one stays in ``citation``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..base.config import MemoryConfig, SourcesConfig
from ..write.sources import SourceFile, list_agent_sessions, list_files

TOOL_NAME = "memory_search"
_CITATION_RE = re.compile(r"\n\nSource: [^\n]*#L\d+(?:-L\d+)?\s*$")


@dataclass
class RealQuery:
    """One ``memory_search`` call the agent made, and what it got back then.

    ``at`` is epoch ms of the call (the assistant message's time; the result's time when the
    call has none); ``line`` the call's 1-based JSONL line, ``result_line`` its result's.
    ``results_then`` is ``None`` when no result was found for the call (a transcript cut
    short); ``disabled``/``error`` what the tool reported when search was unavailable.
    """

    qid: str
    query: str
    at: int | None
    session: str
    line: int
    args: dict[str, Any]
    results_then: list[dict[str, Any]] | None
    result_line: int | None = None
    result_at: int | None = None
    disabled: bool = False
    error: str | None = None
    tool_call_id: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def zero_results(self) -> bool:
        return not self.results_then

    def to_dict(self) -> dict[str, Any]:
        """The JSONL shape ``memory-core queries`` prints: ``{qid, query, at, session, line,
        args, results_then}`` plus ``result_line``, ``disabled``, ``error`` when set."""
        out: dict[str, Any] = {
            "qid": self.qid, "query": self.query, "at": _iso(self.at), "session": self.session,
            "line": self.line, "args": self.args, "results_then": self.results_then}
        if self.result_line is not None:
            out["result_line"] = self.result_line
        if self.disabled:
            out["disabled"] = True
        if self.error:
            out["error"] = self.error
        return out


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def _time_ms(value: Any) -> int | None:
    """Epoch ms of a transcript time (ms or s number, or ISO 8601), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value * 1000 if abs(value) < 1e11 else value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)
    return None


def _record_time(rec: dict[str, Any], msg: dict[str, Any]) -> int | None:
    return _time_ms(msg.get("timestamp")) or _time_ms(rec.get("timestamp"))


def _arguments(block: dict[str, Any]) -> dict[str, Any]:
    args = block.get("arguments", block.get("input"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return {}
    return args if isinstance(args, dict) else {}


def _payload(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object a tool returned: ``details`` when it is the payload, else the first
    text block that parses as an object."""
    details = msg.get("details")
    if isinstance(details, dict) and "results" in details:
        return details
    content = msg.get("content")
    texts = [content] if isinstance(content, str) else [
        b.get("text") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    for t in texts:
        if isinstance(t, str):
            try:
                v = json.loads(t)
            except ValueError:
                continue
            if isinstance(v, dict):
                return v
    return None


def clean_result(r: dict[str, Any]) -> dict[str, Any] | None:
    """A result as the tool produced it before decorating: ``{path, startLine, endLine,
    score, snippet, source}`` (+ ``citation``); ``None`` when it lacks a path or lines."""
    path = r.get("path")
    try:
        start, end = int(r["startLine"]), int(r["endLine"])
    except (KeyError, TypeError, ValueError):
        return None
    if not isinstance(path, str) or not path:
        return None
    snippet = r["snippet"] if isinstance(r.get("snippet"), str) else ""
    if r.get("citation"):
        snippet = _CITATION_RE.sub("", snippet)
    score = r.get("score")
    out: dict[str, Any] = {
        "path": path, "startLine": start, "endLine": end,
        "score": float(score) if isinstance(score, (int, float)) and not isinstance(
            score, bool) else 0.0,
        "snippet": snippet, "source": r.get("source") or r.get("corpus") or "memory"}
    if r.get("citation"):
        out["citation"] = r["citation"]
    return out


def mine_transcript(lines: Iterable[str], session: str) -> list[RealQuery]:
    """The ``memory_search`` calls of one transcript, in file order, paired with their
    results by ``toolCallId``. Unparsable lines are skipped, as the reference skips them."""
    calls: dict[str, RealQuery] = {}
    order: list[RealQuery] = []
    for i, row in enumerate(lines, 1):
        if not row.strip():
            continue
        try:
            rec = json.loads(row)
        except (ValueError, RecursionError):
            continue
        if not isinstance(rec, dict) or rec.get("type") != "message":
            continue
        msg = rec.get("message")
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "assistant" and isinstance(msg.get("content"), list):
            at = _record_time(rec, msg)
            for block in msg["content"]:
                if not (isinstance(block, dict) and block.get("type") in ("toolCall", "toolUse")
                        and block.get("name") == TOOL_NAME):
                    continue
                args = _arguments(block)
                query = args.get("query")
                if not isinstance(query, str):
                    continue
                call_id = str(block.get("id") or f"line{i}")
                q = RealQuery(f"{session}#L{i}:{call_id}", query, at, session, i,
                              {k: v for k, v in args.items() if k != "query"}, None,
                              tool_call_id=call_id)
                calls[call_id] = q
                order.append(q)
        elif role == "toolResult":
            call_id = str(msg.get("toolCallId") or "")
            called = calls.get(call_id)
            if called is None or called.result_line is not None:
                continue
            q = called
            payload = _payload(msg) or {}
            raw = payload.get("results")
            q.results_then = [c for c in (clean_result(r) for r in raw if isinstance(r, dict))
                              if c is not None] if isinstance(raw, list) else []
            q.result_line = i
            q.result_at = _record_time(rec, msg)
            q.disabled = payload.get("disabled") is True or msg.get("isError") is True
            err = payload.get("error")
            q.error = err if isinstance(err, str) else None
            if q.at is None:
                q.at = q.result_at
    return order


def _read_lines(path: Path) -> Iterator[str]:
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            yield line.rstrip("\n")


def mine_queries(files: Sequence[SourceFile]) -> list[RealQuery]:
    """Every ``memory_search`` call of the transcripts in ``files`` (other files ignored),
    ordered by time (calls without a time last), then session and line."""
    out: list[RealQuery] = []
    for f in files:
        if f.kind != "session":
            continue
        try:
            out.extend(mine_transcript(_read_lines(f.abs_path), f.path))
        except OSError:
            continue
    out.sort(key=lambda q: (q.at is None, q.at or 0, q.session, q.line))
    return out


def zero_result_rate(queries: Sequence[RealQuery]) -> float | None:
    """Share of the calls (with a result) that got no result, or ``None`` with no call."""
    answered = [q for q in queries if q.results_then is not None]
    if not answered:
        return None
    return sum(q.zero_results for q in answered) / len(answered)


def transcripts_of_home(sessions_dir: Path, agent: str) -> list[SourceFile]:
    """An agent's transcripts, listed as the reference lists them (whatever the sources)."""
    return list_agent_sessions(str(sessions_dir), agent)


def transcripts_of_workspace(workspace: Path) -> list[SourceFile]:
    """A bare workspace's transcripts (its ``sessions/`` folder, walked), whatever the sources."""
    cfg = MemoryConfig(sources=SourcesConfig(sources=["sessions"], sessions_dir="sessions"))
    return [f for f in list_files(workspace, cfg).files if f.kind == "session"]
