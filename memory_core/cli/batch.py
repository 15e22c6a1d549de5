"""``search --batch FILE``: many queries against one loaded index, one JSON line out per query.

The file is streamed line by line (memory stays bounded even for ``/dev/zero``), and a bad line
never stops the batch: it gets an error line of its own (its ``qid``, or its line number) and
the other lines are answered. The library cuts an over-long query
(:func:`memory_core.read.query.cap_query`, with a note), so one enormous line cannot hold the batch
up for minutes. The lines already there are answered as a group
(:meth:`~memory_core.MemoryIndex.search_many`: one pass over the vector matrix for all of them,
the same answers); a line not written yet is never waited for.
"""

from __future__ import annotations

import json
import os
import select
import stat
import sys
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.fileio import JsonlLine, jsonl_line

if TYPE_CHECKING:  # fusion is loaded by the first search, not by a no-op ``index``
    from ..backends import MemoryBackend

#: A batch line longer than this is answered with an error (a query is a sentence, not a book).
MAX_LINE_BYTES = 64 * 1024
#: Lines read ahead and answered as one group, at most (only lines already there are read).
READ_AHEAD = 64


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


class ReadAhead:
    """The raw lines of a batch file or stream, and whether more are there without waiting.

    Read through the descriptor, a piece at a time, never holding more than ``limit`` bytes of
    a line (the rest of an over-long line is dropped as it comes): ``(line, too_long)`` pairs,
    numbered and judged as :func:`~memory_core.base.fileio.iter_jsonl` judges them.
    """

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        #: a pipe, a terminal, a socket: what is not written yet may come later
        self.waits = not stat.S_ISREG(os.fstat(fd).st_mode)
        self._buf = bytearray()
        self._lines: deque[tuple[bytes, bool]] = deque()
        self._eof = False
        self._skipping = False  # inside an over-long line, already reported

    def next(self, *, wait: bool) -> tuple[bytes, bool] | None:
        """The next line; ``None`` at the end, or (``wait=False``) when reading it would
        wait for the writer."""
        while not self._lines:
            if self._eof or (not wait and self.waits and not self._ready()):
                return None
            self._read()
        return self._lines.popleft()

    def _ready(self) -> bool:
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        return bool(poll.poll(0))

    def _read(self) -> None:
        data = os.read(self.fd, 1 << 16)
        if not data:
            self._eof = True
            if self._buf and not self._skipping:
                self._lines.append((bytes(self._buf), False))
            self._buf.clear()
            return
        self._buf += data
        start = 0
        while (nl := self._buf.find(b"\n", start)) >= 0:
            line = bytes(self._buf[start:nl + 1])
            start = nl + 1
            if self._skipping:
                self._skipping = False
            else:
                self._lines.append((b"", True) if len(line) > self.limit else (line, False))
        del self._buf[:start]
        if self._skipping:
            self._buf.clear()
        elif len(self._buf) > self.limit:
            self._lines.append((b"", True))
            self._skipping = True
            self._buf.clear()


def search_batch(backend: MemoryBackend, batch: str, explain: bool, search: dict[str, Any]
                 ) -> int:
    """Answer every ``{qid, query}`` line of ``batch`` (``search``: the keywords of every
    :meth:`MemoryBackend.search`); the model and index load once.

    Each non-blank input line gives exactly one output line: ``{qid, results}`` (plus ``note``
    when the query was capped) or ``{qid, line, error, results: []}``; errors are also
    reported on stderr. Exit code 0 even when some lines were bad (they are in the output).

    The lines already there when a query is read (a file's next ones, what a pipe holds) are
    read with it, up to :data:`READ_AHEAD`, and answered as a group
    (:meth:`MemoryBackend.search_many`: the same answers); a line still to come is never
    waited for, so an interactive writer gets each answer as soon as its line is in.
    """
    path = Path(batch)
    with path.open("rb") as f:  # a missing file: one line from main, as any OSError
        lines = ReadAhead(f.fileno(), MAX_LINE_BYTES)
        n = 0
        while (first := lines.next(wait=True)) is not None:
            group = [first]
            while len(group) < READ_AHEAD and (more := lines.next(wait=False)) is not None:
                group.append(more)
            items = []
            for raw, too_long in group:
                n += 1
                item = jsonl_line(n, raw, too_long, MAX_LINE_BYTES)
                if item is not None:
                    items.append(item)
            _answer(backend, path, items, search, explain)
    return 0


def _answer(backend: MemoryBackend, path: Path, items: list[JsonlLine], search: dict[str, Any],
            explain: bool) -> None:
    """One output line per item, in order, written once the group is answered (its recalls
    are recorded by then: a killed batch keeps what it answered); a search's error is raised
    after the lines before it are written."""
    asked = [(item, *_query_of(item.value)) if not item.error else (item, None, item.error)
             for item in items]
    results = backend.search_many([q for _, q, _ in asked if q is not None], **search)
    outs: list[str] = []
    try:
        for item, query, why in asked:
            qid = _qid(item.value, item.line)
            if query is None:
                print(f"memory-core: {path}:{item.line}: {why}, skipped", file=sys.stderr)
                out: dict[str, Any] = {"qid": qid, "line": item.line, "error": why,
                                       "results": []}
            else:
                res = next(results)
                out = {"qid": qid, "results": [h.to_result(explain) for h in res.hits]}
                if res.note:
                    out["note"] = res.note
            outs.append(json.dumps(out, ensure_ascii=False) + "\n")
    finally:
        sys.stdout.write("".join(outs))
        sys.stdout.flush()  # a consumer reading the pipe sees each answer as it comes
