"""Live latencies through a running MCP server over HTTP: write → searchable, and query time.

Starts ``memory-core mcp --transport http`` on a copy of the demo workspace (local model by
default, as an agent would run it) and measures, with the SDK's client, polling every 50 ms:

* a new diary: from the write until ``memory_search`` returns it (target: 3 s);
* a transcript growing by 60 messages: from the last append until it is found (target: 8 s,
  the reference's 5 s debounce included);
* a deleted diary: from the unlink until it is no longer returned (target: 3 s);
* warm query latency through the server (the model stays loaded), median and p95 of 30.

    .venv/bin/python benchmarks/bench_live.py [--provider local|none] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

ROOT = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).with_name("memory-core"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def message(i: int, text: str) -> str:
    return json.dumps({"type": "message", "timestamp": 1_700_000_000 + i,
                       "message": {"role": "user" if i % 2 == 0 else "assistant",
                                   "content": text}}) + "\n"


async def paths(c: Client, q: str) -> list[str]:
    r = await c.call_tool("memory_search", {"query": q})
    return [h["path"] for h in r.structured_content.get("results", [])]


async def until(c: Client, q: str, path: str, present: bool, timeout: float = 60) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if (path in await paths(c, q)) == present:
            return time.perf_counter() - t0
        await anyio.sleep(0.05)
    return float("inf")


async def measure(url: str, ws: Path, rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"diary": [], "transcript60": [], "deletion": [], "query": []}
    async with Client(url) as c:
        await paths(c, "warm up")
        for r in range(rounds):
            diary = ws / "memory" / f"2027-01-{r + 1:02d}.md"
            token = f"XRAY_LIVE_{r}_{int(time.time())}"
            diary.write_text(f"# Day\n\nThe deploy key is {token}.\n")
            out["diary"].append(await until(c, token, diary.relative_to(ws).as_posix(), True))

            t = ws / "sessions" / f"bench-{r}.jsonl"
            t.write_text(message(0, "start"))
            await until(c, "start", t.relative_to(ws).as_posix(), True, timeout=15)
            await anyio.sleep(6)  # idle past the 5 s transcript debounce: the worst case
            word = f"YANKEE_GROWN_{r}"
            with t.open("a") as h:
                for i in range(1, 61):
                    h.write(message(i, f"step {i}: {word} set to {i}"))
            out["transcript60"].append(await until(c, word, t.relative_to(ws).as_posix(), True))

            diary.unlink()
            out["deletion"].append(await until(c, token, diary.relative_to(ws).as_posix(),
                                               False))
        for q in ["when was the computer overheating?", "COOKIE_EXPIRED", "连接池"] * 10:
            t0 = time.perf_counter()
            await paths(c, q)
            out["query"].append(time.perf_counter() - t0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--provider", default="local")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-live-"))
    ws = tmp / "ws"
    shutil.copytree(ROOT / "examples" / "demo-workspace", ws,
                    ignore=shutil.ignore_patterns(".memory"))
    (ws / "sessions").mkdir(exist_ok=True)
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([EXE, "mcp", "-w", str(ws), "--provider", args.provider,
                             "--transport", "http", "--port", str(port)], env=env,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        proc.stderr.readline()
        url = f"http://127.0.0.1:{port}/mcp"
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.05)
        res = anyio.run(measure, url, ws, args.rounds)
        startup = time.perf_counter() - t0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"bench_live: provider={args.provider}, rounds={args.rounds}, "
          f"whole run {startup:.1f} s")
    targets = {"diary": 3.0, "transcript60": 8.0, "deletion": 3.0}
    for k in ("diary", "transcript60", "deletion"):
        v = res[k]
        print(f"  {k:13s} write→searchable  median {statistics.median(v):6.2f} s  "
              f"max {max(v):6.2f} s  (target {targets[k]:.0f} s)")
    q = sorted(res["query"])
    print(f"  query over HTTP  median {statistics.median(q) * 1000:6.1f} ms  "
          f"p95 {q[int(0.95 * (len(q) - 1))] * 1000:6.1f} ms  (n={len(q)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
