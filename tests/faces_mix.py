"""The faces of the engine run together on one workspace (issue #19 items 1-3), for a bounded time.

Real processes only, loopback only: ``memory-core mcp --transport http`` with two SDK clients
searching in a loop, two loops of ``memory-core index``, ``memory-core watch``, a loop of
``promote --apply`` / ``promote --undo``, a loop of ``memory-core search`` (which syncs
first), and a writer appending to ten diaries every 0.1 s.
:func:`run_mix` returns what happened (every search's latency and outcome, every command's
failures); :func:`index_matches_fresh_build` and :func:`integrity` check the index afterwards.
Used by ``tests/test_faces_concurrency.py`` (short, in CI) and ``benchmarks/bench_faces.py``
(figures, minutes long).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

EXE = str(Path(sys.executable).with_name("memory-core"))
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "TOKENIZERS_PARALLELISM": "false"}
#: Queries with known hits in the demo workspace (keyword leg: provider ``none``), and the file
#: each must find. The writer only appends new diaries and promotion only appends to
#: MEMORY.md, so these hits hold throughout: an empty answer is a silent failure.
QUERIES: list[tuple[str, str]] = [
    ("COOKIE_EXPIRED", "memory/2026-11-03.md"),
    ("ERR_TLS_HANDSHAKE", "memory/2026-10-30.md"),
    ("PG_DEADLOCK_40P01", "memory/2026-10-27.md"),
    ("which port does PgBouncer listen on", "memory/2026-10-20.md"),
    ("HTTP 429 Retry-After backoff", "memory/2026-10-23.md"),
    ("cron expression for the incremental crawl", "memory/2026-10-20.md"),
]
#: Promotion copies snippets into MEMORY.md, which may then rank above their diary: look deep
#: enough that the known hit is always among the results.
MAX_RESULTS = 20
#: Words that mean the index itself failed (never acceptable in any face's output).
INDEX_TROUBLE = re.compile(r"Traceback|malformed|damaged|disk I/O|not a database|"
                           r"not an index this project created|Expecting value", re.I)
#: The query of the ``memory-core search`` loop (a CLI search syncs first, then answers).
CLI_QUERY = ("COOKIE_EXPIRED", "memory/2026-11-03.md")
WRITER_PERIOD_S = 0.1
DIARIES = 10
PROMOTE_GATES = ["--min-score", "0", "--min-recall-count", "1", "--min-unique-queries", "1",
                 "--max-age-days", "-1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class SearchResult:
    client: int
    query: str
    seconds: float
    ok: bool
    problem: str = ""


@dataclass
class CommandRun:
    face: str
    rc: int
    seconds: float
    stderr: str
    stdout: str = ""


@dataclass
class MixReport:
    """Everything the faces did; ``problems`` lists what must never happen."""

    seconds: float
    searches: list[SearchResult] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    appended: int = 0
    #: "path: mark" of every line the writer appended that is not in its file at the end
    lost: list[str] = field(default_factory=list)
    server_stderr: str = ""
    watch_stderr: str = ""

    @property
    def answered(self) -> int:
        return sum(r.ok for r in self.searches)

    def search_problems(self) -> list[str]:
        return [f"client {r.client} {r.query!r}: {r.problem}" for r in self.searches if not r.ok]

    def command_problems(self) -> list[str]:
        out = []
        for c in self.commands:
            expected = c.rc == 0 or (c.face == "undo" and c.rc == 2
                                     and not INDEX_TROUBLE.search(c.stderr))
            if not expected or INDEX_TROUBLE.search(c.stderr):
                out.append(f"{c.face} rc={c.rc}: {c.stderr.strip()[-300:]}")
            elif c.face == "search" and CLI_QUERY[1] not in c.stdout:
                out.append(f"search answered without its hit: {c.stdout.strip()[:300]}")
        for name, err in (("mcp", self.server_stderr), ("watch", self.watch_stderr)):
            if INDEX_TROUBLE.search(err):
                out.append(f"{name}: {err.strip()[-300:]}")
        return out

    def problems(self) -> list[str]:
        return self.search_problems() + self.command_problems() + [
            f"lost {m}" for m in self.lost[:20]]

    def latencies(self) -> list[float]:
        return sorted(r.seconds for r in self.searches if r.ok)

    def summary(self) -> dict[str, Any]:
        lat = self.latencies()
        faces: dict[str, int] = {}
        for c in self.commands:
            faces[c.face] = faces.get(c.face, 0) + 1
        return {
            "seconds": round(self.seconds, 1), "searches": len(self.searches),
            "answered": self.answered, "errors": len(self.search_problems()),
            "commandProblems": len(self.command_problems()),
            "p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
            "p99_ms": round(percentile(lat, 99) * 1000, 1) if lat else None,
            "commands": faces, "diaryAppends": self.appended, "linesLost": len(self.lost),
        }


def percentile(sorted_values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of already sorted values."""
    k = max(0, min(len(sorted_values) - 1, round(p / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[k]


class McpServer:
    """``memory-core mcp --transport http`` on a free loopback port."""

    def __init__(self, ws: Path, provider: str = "none"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [EXE, "mcp", "-w", str(ws), "--provider", provider, "--transport", "http",
             "--port", str(self.port)], env=ENV, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if "serving" not in line:
            raise RuntimeError(f"mcp server did not start: {line}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("mcp server did not open its port")

    def stop(self) -> str:
        return stop(self.proc)


def stop(proc: subprocess.Popen[str]) -> str:
    """SIGINT, then the process's stderr (killed after 20 s)."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err or ""


async def _client_loop(url: str, n: int, until: float, out: list[SearchResult]) -> None:
    async with Client(url) as c:
        i = n
        while time.monotonic() < until:
            query, want = QUERIES[i % len(QUERIES)]
            i += 1
            t0 = time.perf_counter()
            try:
                r = await c.call_tool("memory_search", {"query": query, "maxResults": MAX_RESULTS})
            except Exception as e:  # the transport failed: counted, never hidden
                out.append(SearchResult(n, query, time.perf_counter() - t0, False,
                                        f"{type(e).__name__}: {e}"))
                continue
            dt = time.perf_counter() - t0
            if r.is_error:
                text = r.content[0].text if r.content else "?"
                out.append(SearchResult(n, query, dt, False, f"error: {text[:300]}"))
                continue
            data = r.structured_content or {}
            paths = [h.get("path") for h in data.get("results", [])]
            if want not in paths:
                why = "empty success" if not paths else f"{want} missing from {paths[:5]}"
                out.append(SearchResult(n, query, dt, False, why))
                continue
            out.append(SearchResult(n, query, dt, True))


def search_clients(url: str, seconds: float, clients: int = 2) -> list[SearchResult]:
    """``clients`` SDK clients searching in a loop for ``seconds``."""
    out: list[SearchResult] = []
    until = time.monotonic() + seconds

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(clients):
                tg.start_soon(_client_loop, url, n, until, out)

    anyio.run(main)
    return out


def _command_loop(face: str, argvs: list[list[str]], stop_at: threading.Event,
                  out: list[CommandRun], lock: threading.Lock) -> None:
    i = 0
    while not stop_at.is_set():
        argv = argvs[i % len(argvs)]
        name = face if len(argvs) == 1 else ("apply" if "--apply" in argv else "undo")
        i += 1
        t0 = time.perf_counter()
        p = subprocess.run([EXE, *argv], env=ENV, capture_output=True, text=True, timeout=600)
        with lock:
            out.append(CommandRun(name, p.returncode, time.perf_counter() - t0, p.stderr,
                                  p.stdout if face == "search" else ""))


def _written(ws: Path) -> list[Path]:
    """The agent's files the writer appends to: ten diaries (today's among them while the
    clock is in December 2026, else today's added) and MEMORY.md."""
    today = ws / "memory" / f"{time.strftime('%Y-%m-%d')}.md"
    diaries = [ws / "memory" / f"2026-12-{d:02d}.md" for d in range(1, DIARIES + 1)]
    return [*diaries, *([today] if today not in diaries else []), ws / "MEMORY.md"]


def _writer(ws: Path, stop_at: threading.Event, counter: list[int]) -> None:
    n = 0
    while not stop_at.wait(WRITER_PERIOD_S):
        for d in _written(ws):
            with d.open("a", encoding="utf-8") as f:
                f.write(f"- {time.strftime('%H:%M:%S')} entry {n} WRITER_MARK_{n}\n")
        n += 1
    counter[0] = n


def lost_lines(ws: Path, marks: int) -> list[str]:
    """Every ``WRITER_MARK_n`` (n < ``marks``) missing from a file the writer appended to:
    a write of the user's Markdown (promote, undo, dream) that lost the agent's lines."""
    out = []
    for f in _written(ws):
        found = set(re.findall(r"^- [\d:]+ entry \d+ WRITER_MARK_(\d+)$",
                               f.read_text(encoding="utf-8"), re.M))
        out += [f"{f.name}: WRITER_MARK_{n}" for n in range(marks) if str(n) not in found]
    return out


def run_mix(ws: Path, seconds: float, *, provider: str = "none", writers: bool = True
            ) -> MixReport:
    """Run the faces on ``ws`` for ``seconds``; ``writers=False``: only the server and its two
    clients (the baseline the benchmark compares with)."""
    common = ["-w", str(ws), "--provider", provider]
    server = McpServer(ws, provider)
    report = MixReport(seconds=seconds)
    stop_at = threading.Event()
    lock = threading.Lock()
    threads: list[threading.Thread] = []
    watch: subprocess.Popen[str] | None = None
    counter = [0]
    try:
        if writers:
            watch = subprocess.Popen([EXE, "watch", *common], env=ENV, text=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            loops: list[tuple[str, list[list[str]]]] = [
                ("index", [["index", *common]]),
                ("index", [["index", *common]]),
                ("promote", [["promote", *common, "--apply", *PROMOTE_GATES],
                             ["promote", *common, "--undo"]]),
                ("search", [["search", *common, "--json", "--max-results", str(MAX_RESULTS),
                             CLI_QUERY[0]]]),
                ("dream", [["dream", *common, "--storage", "inline", "--diary"]]),
            ]
            threads = [threading.Thread(target=_command_loop, args=(f, a, stop_at,
                                                                    report.commands, lock))
                       for f, a in loops]
            threads.append(threading.Thread(target=_writer, args=(ws, stop_at, counter)))
            for t in threads:
                t.start()
        t0 = time.monotonic()
        report.searches = search_clients(server.url, seconds)
        report.seconds = time.monotonic() - t0
    finally:
        stop_at.set()
        for t in threads:
            t.join(600)
        if watch is not None:
            report.watch_stderr = stop(watch)
        report.server_stderr = server.stop()
    report.appended = counter[0] * len(_written(ws))
    report.lost = lost_lines(ws, counter[0]) if writers else []
    return report


def chunk_set(db: Path) -> set[tuple[str, int, int, str]]:
    """(path, start line, end line, text hash) of every chunk of the index at ``db``."""
    from memory_core.base.sql import sqlite

    con = sqlite.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {(str(p), int(a), int(b), str(h)) for p, a, b, h in con.execute(
            "SELECT path, start_line, end_line, hash FROM chunks")}
    finally:
        con.close()


def integrity(db: Path) -> str:
    from memory_core.base.sql import sqlite

    con = sqlite.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return "; ".join(str(r[0]) for r in con.execute("PRAGMA integrity_check"))
    finally:
        con.close()


def index_path(ws: Path, provider: str = "none") -> Path:
    from memory_core import MemoryIndex

    with MemoryIndex.open(ws, provider=provider) as idx:
        return idx.store_path


def index_matches_fresh_build(ws: Path, provider: str = "none"
                              ) -> tuple[set[tuple[str, int, int, str]],
                                         set[tuple[str, int, int, str]]]:
    """Bring the index up to date with one ``index`` run, build the same Markdown afresh into
    another file with ``index --force``; return (only in the index, only in the fresh build)."""
    common = ["-w", str(ws), "--provider", provider]
    subprocess.run([EXE, "index", *common], env=ENV, check=True, capture_output=True,
                   timeout=600)
    fresh = ws.parent / "fresh-build.sqlite"
    subprocess.run([EXE, "index", *common, "--force", "--db", str(fresh)], env=ENV, check=True,
                   capture_output=True, timeout=600)
    ours, theirs = chunk_set(index_path(ws, provider)), chunk_set(fresh)
    return ours - theirs, theirs - ours
