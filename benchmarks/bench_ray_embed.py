"""``index --executor ray`` against the serial index: chunks embedded per second, side by side.

One synthetic workspace (``--files`` diaries of ``--paras`` paragraphs) is copied twice; each copy
is indexed from nothing with the real local model (all-MiniLM-L6-v2), once serially and once
with a local Ray and ``--actors`` embedding actors, in this order, in one run. The index is
written by this process in both cases. Printed: chunks, seconds and chunks/s of each, their
ratio, and whether the vectors are equal (bit for bit, then to 1e-6).

    .venv/bin/python benchmarks/bench_ray_embed.py --files 40 --actors 2
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from memory_core import MemoryIndex
from memory_core.embeddings.ray_pool import RayEmbedPool

WORDS = ("pool router backup firmware deadline peanut jazz glacier vlan switch dimmer hiring "
         "lunch photos gym swimming rack spare access point bricked rollback allergy bake sale "
         "music night orleans wireguard noon size nightly disk usb plan").split()


def workspace(root: Path, files: int, paras: int) -> Path:
    rng = np.random.default_rng(26)
    (root / "memory").mkdir(parents=True)
    for d in range(files):
        text = "\n\n".join(" ".join(rng.choice(WORDS, size=60)) for _ in range(paras))
        (root / "memory" / f"2026-{d // 28 + 1:02d}-{d % 28 + 1:02d}.md").write_text(
            f"# Day {d}\n\n{text}\n", encoding="utf-8")
    (root / "memory-workbench.toml").write_text(
        '[provider]\nprovider = "local"\nfallback = []\n\n[chunking]\ntokens = 120\n'
        'overlap = 20\n', encoding="utf-8")
    return root


def run(ws: Path, pool: RayEmbedPool | None) -> tuple[int, float, dict[str, np.ndarray]]:
    with MemoryIndex.open(ws) as idx:
        t0 = time.perf_counter()
        report = idx.sync(executor=pool) if pool else idx.sync()
        seconds = time.perf_counter() - t0
        ids, mat = idx.store.embeddings()
    return report.embedded, seconds, dict(zip(ids, mat, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=40)
    ap.add_argument("--paras", type=int, default=12)
    ap.add_argument("--actors", type=int, default=2)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    try:
        base = workspace(root / "serial", args.files, args.paras)
        shutil.copytree(base, root / "ray")
        n_s, t_s, v_s = run(base, None)
        with MemoryIndex.open(root / "ray") as idx:
            pool = RayEmbedPool(idx.config.provider, actors=args.actors)
        n_r, t_r, v_r = run(root / "ray", pool)
        exact = v_s.keys() == v_r.keys() and all(np.array_equal(v_s[k], v_r[k]) for k in v_s)
        close = v_s.keys() == v_r.keys() and all(
            np.allclose(v_s[k], v_r[k], atol=1e-6) for k in v_s)
        print(f"serial:          {n_s} chunks embedded in {t_s:.1f} s = {n_s / t_s:.1f} chunks/s")
        print(f"ray, {args.actors} actors:  {n_r} chunks embedded in {t_r:.1f} s = "
              f"{n_r / t_r:.1f} chunks/s (incl. Ray start and {args.actors} model loads)")
        print(f"ray / serial throughput: {(n_r / t_r) / (n_s / t_s):.2f}x; "
              f"vectors equal: {exact} (bit for bit), {close} (to 1e-6)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
