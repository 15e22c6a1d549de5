"""``search --batch`` answers the lines already there as a group (issue #26 item 0, the batch's
marginal query): one pass over the vector matrix for the group's vector legs
(``VectorMatrix.search_many``, ``MemoryIndex.search_many``), the same answers as one query at a
time, and never a wait for a line not written yet.

Real engine, real files, the real local model, and a real OpenAI-compatible server on
127.0.0.1 (MiniLM vectors) for the CLI's remote provider.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.backends import BuiltinBackend
from memory_core.storage.vectors import VectorMatrix

from .embed_server import EmbedServer

try:
    from tests.conftest import ROOT, copy_demo
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from conftest import ROOT, copy_demo  # type: ignore[no-redef]

EXAMPLES = ROOT / "examples"


def demo_queries() -> list[str]:
    """The demo's evaluation queries and variants of them (cut, lower-cased, asked): 141,
    some repeated, nonsense that finds little, a CJK one."""
    base: list[str] = []
    for name in ("demo-queries.jsonl", "demo-home-queries.jsonl", "demo-home-no-answer.jsonl"):
        for line in (EXAMPLES / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                base.append(json.loads(line)["query"])
    variants = [" ".join(q.split()[:2]) for q in base[:30]] + [q.lower() + "?" for q in base[:20]]
    return base + variants + ["xyzzy plugh", base[0], "连接池 超时"]


QUERIES = demo_queries()
#: The fast tier's share of :data:`QUERIES` (every third, and the last three: nonsense, a
#: repeat, the CJK one): the engine's group asks each seven times with the local model (~30 CPU
#: s for all 141), the batch file twice through two CLI processes and the MiniLM server (~9 CPU
#: s). The full tier asks all 141 of both.
SOME_QUERIES = QUERIES[::3] + QUERIES[-3:]


# --------------------------------------------------------------------------- the matrix

def matrix(n: int, d: int, seed: int) -> VectorMatrix:
    """A loaded sidecar of ``n`` unit rows (some duplicated: ties), two sources."""
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, d)).astype(np.float32)
    m[n // 2: n // 2 + 40] = m[:40]  # duplicate chunks score alike
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    ids = np.array([f"c{i:06d}".encode() for i in range(n)], dtype="S7")
    codes = (np.arange(n) % 3 == 0).astype(np.uint8)
    return VectorMatrix("s", m, np.arange(1, n + 1, dtype=np.int64), ids, codes,
                        ["memory", "sessions"])


def oracle(vm: VectorMatrix, q: np.ndarray, k: int, sources: list[str] | None
           ) -> list[str]:
    """The ``k`` nearest rows by a float64 cosine, ties in row order."""
    sims = vm.matrix.astype(np.float64) @ (q / np.linalg.norm(q)).astype(np.float64)
    rows = np.arange(vm.rows)
    if sources:
        rows = rows[np.isin(vm.codes, [vm.sources.index(s) for s in sources])]
    order = rows[np.lexsort((rows, -sims[rows]))][:k]
    return [vm.ids[i].decode() for i in order]


@pytest.mark.parametrize("sources", [None, ["sessions"]])
def test_search_many_answers_as_search_one_query_at_a_time(sources: list[str] | None) -> None:
    vm = matrix(6000, 384, 7)
    rng = np.random.default_rng(3)
    qs = list(rng.standard_normal((40, 384)).astype(np.float32))
    qs[5] = vm.matrix[7] * 3  # a chunk's own vector (a tie with its duplicate)
    qs[9] = np.zeros(384, np.float32)  # nothing to rank by
    for limit in (1, 24, 200, 7000):
        many = vm.search_many(qs, limit, sources)
        one = [vm.search(q, limit, sources) for q in qs]
        assert many == one  # ids, order and every score's bits
        assert many[9] == []
        for q, got in zip(qs, many, strict=True):
            if np.any(q):
                # no row lost at the cut: the nearest rows, whatever kernel picked them
                want = oracle(vm, q, min(limit, 200), sources)
                assert [i for i, _ in got[:len(want)]] == want
    grouped = vm.search_many(qs[:4], 24) + vm.search_many(qs[4:], 24)
    assert grouped == vm.search_many(qs, 24)  # a query's answer does not depend on its group


# --------------------------------------------------------------------------- the engine

def results(res: Any) -> str:
    return json.dumps([[h.to_result(True) for h in res.hits],
                       [h.to_result(True) for h in res.below_gate], res.abstention, res.mode])


def noting(into: list[tuple[str, int]]) -> Any:
    """An ``on_hits`` hook that notes each call's query and number of hits."""
    return lambda q, hits: into.append((q, len(hits)))


@pytest.mark.parametrize("queries", [
    pytest.param(SOME_QUERIES, id="some"), pytest.param(QUERIES, id="all", marks=pytest.mark.full)])
def test_memory_index_search_many_answers_as_search(indexed_demo: Path, queries: list[str]
                                                    ) -> None:
    with MemoryIndex.open(indexed_demo) as idx:
        alone: dict[str, list[str]] = {}  # each setting's answers, one query at a time
        for name, kw in (("default", {}), ("memory", {"sources": ["memory"], "max_results": 3}),
                         ("reference", {"fusion": "reference", "min_score": 0.2})):
            seen: list[tuple[str, int]] = []
            one_seen: list[tuple[str, int]] = []
            many = [results(r) for r in idx.search_many(queries, on_hits=noting(seen), **kw)]
            one = [results(idx.search(q, on_hits=noting(one_seen), **kw)) for q in queries]
            assert many == one
            assert seen == one_seen and seen
            alone[name] = one
        assert any('"via": "vector"' in r or '"via": "both"' in r for r in many)
        # the backend face: builtin answers as a group, the same results as idx.search(q) gave
        # above (its default settings; the on_hits hook changes no answer)
        face = [results(r.detail) for r in BuiltinBackend(idx).search_many(queries)]
        assert face == alone["default"]


# --------------------------------------------------------------------------- the CLI

@pytest.fixture(scope="module")
def server() -> Iterator[EmbedServer]:
    with EmbedServer() as s:
        yield s


@pytest.fixture(scope="module")
def remote_built(tmp_path_factory: pytest.TempPathFactory, server: EmbedServer) -> Path:
    """The demo indexed once through the module's server; each test works on its own copy."""
    ws = copy_demo(tmp_path_factory.mktemp("remote"))
    cfg = ws / "memory-workbench.toml"
    cfg.write_text(cfg.read_text(encoding="utf-8") + '\n[provider]\nprovider = "openai"\n'
                   f'base_url = "{server.base_url}"\nmodel = "minilm"\nfallback = []\n',
                   encoding="utf-8")
    subprocess.run([sys.executable, "-m", "memory_core", "index", "-w", str(ws),
                    "--no-progress"], cwd=ROOT, check=True, capture_output=True, timeout=300)
    return ws


def remote_demo(tmp: Path, built: Path) -> Path:
    """A copy of ``built`` with its index (mtimes kept: the copy has nothing to sync)."""
    ws = tmp / "demo-workspace"
    shutil.copytree(built, ws)
    return ws


_PENDING: dict[int, bytes] = {}


def read_line(stream: IO[str], timeout: float) -> str:
    """A line of a child's output, failing (not hanging) when none comes within ``timeout``
    (read from the descriptor: a buffered reader would hide lines already read from select)."""
    fd = stream.fileno()
    buf = _PENDING.get(fd, b"")
    while b"\n" not in buf:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"no answer within {timeout:g} s: the batch waited for the next line"
        data = os.read(fd, 1 << 16)
        assert data, "the batch ended without answering"
        buf += data
    line, _, _PENDING[fd] = buf.partition(b"\n")
    return line.decode("utf-8") + "\n"


def fed_one_at_a_time(ws: Path, lines: list[str], *extra: str) -> list[str]:
    """The batch's answers when each line is written only after the previous answer came."""
    proc = subprocess.Popen([sys.executable, "-m", "memory_core", "search", "--batch",
                             "/dev/stdin", "-w", str(ws), *extra], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None
    out = []
    try:
        for line in lines:
            proc.stdin.write(line)
            proc.stdin.flush()
            out.append(read_line(proc.stdout, 120))
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    return out


@pytest.mark.parametrize("queries", [
    pytest.param(SOME_QUERIES, id="some"), pytest.param(QUERIES, id="all", marks=pytest.mark.full)])
def test_a_batch_file_answers_as_its_lines_fed_one_at_a_time(
        tmp_path: Path, server: EmbedServer, remote_built: Path, queries: list[str]) -> None:
    ws = remote_demo(tmp_path, remote_built)
    lines = [json.dumps({"qid": i, "query": q}) + "\n" for i, q in enumerate(queries)]
    lines[3] = "not json\n"  # a bad line in a group keeps its place
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(lines), encoding="utf-8")
    server.reset()
    grouped = subprocess.run([sys.executable, "-m", "memory_core", "search", "--batch",
                              str(batch), "-w", str(ws), "--explain", "--no-record"],
                             cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    n_grouped = len(server.requests)
    server.reset()
    single = fed_one_at_a_time(ws, lines, "--explain", "--no-record")
    assert grouped.stdout.splitlines(keepends=True) == single
    assert len(single) == len(queries)
    assert json.loads(single[3])["error"].startswith("not JSON")
    assert any('"via": "vector"' in s or '"via": "both"' in s for s in single)
    # the same requests: one a query, each embedded alone, as a query alone is
    assert n_grouped == len(server.requests) == len(queries) - 1
    assert all(r.n_inputs == 1 for r in server.requests)


def test_a_killed_grouped_batch_keeps_the_recalls_of_what_it_answered(
        tmp_path: Path, remote_built: Path) -> None:
    ws = remote_demo(tmp_path, remote_built)
    proc = subprocess.Popen([sys.executable, "-m", "memory_core", "search", "--batch",
                             "/dev/stdin", "-w", str(ws)], cwd=ROOT, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    asked = ["COOKIE_EXPIRED", "which port does PgBouncer listen on",
             "HTTP 429 Retry-After backoff", "ERR_TLS_HANDSHAKE"]
    try:
        # written at once: the batch reads them as one group
        proc.stdin.write("".join(json.dumps({"qid": i, "query": q}) + "\n"
                                 for i, q in enumerate(asked)))
        proc.stdin.flush()
        got = [json.loads(read_line(proc.stdout, 120)) for _ in asked]
        assert [g["qid"] for g in got] == list(range(len(asked)))
        # the batch is still running (its input is open) when another process reads
        with pr.open_state(ws) as st:
            rows = st.recall_entries()
        recorded = {h for e in rows for h in e["query_hashes"]}
        diaries = {pr.query_hash(q) for q, g in zip(asked, got, strict=True)
                   if any(re.match(r"memory/\d{4}-\d{2}-\d{2}", r["path"])
                          for r in g["results"])}
        assert len(diaries) >= 2 and diaries <= recorded
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    with pr.open_state(ws) as st:
        assert st.recall_entries() == rows  # nothing lost, and the store still opens
