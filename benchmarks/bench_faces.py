"""The faces together under stress (issue #19): searches answered, errors, latency under the mix.

Two runs on fresh copies of the demo workspace, in this process, with the same two MCP clients
searching in a loop over HTTP (``tests/faces_mix.py``):

* **baseline**: the MCP server and its clients alone;
* **mix**: the same, plus two ``memory-core index`` loops, ``memory-core watch``, a
  ``promote --apply``/``--undo`` loop, a ``memory-core search`` loop and a writer appending
  to ten diaries every 0.1 s.

It prints, for each, the searches answered, the errors (error results, empty successes, wrong
answers), p50/p99 latency and searches per second, and the mix's ratios to the baseline; after
the mix, ``PRAGMA integrity_check`` and whether the index equals a fresh ``index --force`` build
of the same Markdown. Any error, a damaged index or a differing build exits 1.

    .venv/bin/python benchmarks/bench_faces.py [--seconds 60] [--baseline-seconds N]
        [--provider none|local] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.faces_mix import (  # noqa: E402  (the repository root is on the path only now)
    MixReport,
    index_matches_fresh_build,
    index_path,
    integrity,
    run_mix,
)


def fresh_demo(parent: Path, name: str) -> Path:
    ws = parent / name
    shutil.copytree(ROOT / "examples" / "demo-workspace", ws,
                    ignore=shutil.ignore_patterns(".memory"))
    return ws


def line(name: str, s: dict[str, Any]) -> str:
    rate = s["searches"] / s["seconds"] if s["seconds"] else 0.0
    return (f"{name:<9} {s['seconds']:>7.1f} s  {s['searches']:>6} searches  "
            f"{s['answered']:>6} answered  {s['errors']:>4} errors  "
            f"p50 {s['p50_ms']} ms  p99 {s['p99_ms']} ms  {rate:.1f}/s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="length of the mix (default 60)")
    ap.add_argument("--baseline-seconds", type=float,
                    help="length of the baseline (default: the mix's, at most 60)")
    ap.add_argument("--provider", default="none", help="embedding provider (default none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    base_s = args.baseline_seconds or min(args.seconds, 60)
    with tempfile.TemporaryDirectory(prefix="bench-faces-") as tmp:
        t = Path(tmp)
        print(f"baseline: MCP server + 2 clients, {base_s:g} s ...", file=sys.stderr)
        baseline = run_mix(fresh_demo(t / "a", "ws"), base_s, provider=args.provider,
                           writers=False)
        print(f"mix: + 2 index loops, watch, promote loop, search loop, diary writer, "
              f"{args.seconds:g} s ...", file=sys.stderr)
        ws = fresh_demo(t / "b", "ws")
        mix = run_mix(ws, args.seconds, provider=args.provider)
        check = integrity(index_path(ws, args.provider))
        only_ours, only_fresh = index_matches_fresh_build(ws, args.provider)
    out = report(baseline, mix, check, len(only_ours), len(only_fresh))
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(line("baseline", out["baseline"]))
        print(line("mix", out["mix"]))
        r = out["ratios"]
        print(f"mix / baseline: p50 {r['p50']}x  p99 {r['p99']}x  rate {r['rate']}x")
        print(f"commands in the mix: {out['mix']['commands']}; diary appends "
              f"{out['mix']['diaryAppends']}; command problems {out['mix']['commandProblems']}")
        print(f"after the mix: integrity_check {check}; index vs fresh --force build: "
              f"{len(only_ours)} chunks only in the index, {len(only_fresh)} only in the build")
        for p in out["problems"][:10]:
            print(f"  problem: {p}")
    return 0 if out["ok"] else 1


def report(baseline: MixReport, mix: MixReport, check: str, only_ours: int, only_fresh: int
           ) -> dict[str, Any]:
    b, m = baseline.summary(), mix.summary()

    def ratio(x: float | None, y: float | None) -> float | None:
        return round(x / y, 2) if x and y else None

    rate_b = b["searches"] / b["seconds"] if b["seconds"] else None
    rate_m = m["searches"] / m["seconds"] if m["seconds"] else None
    problems = baseline.problems() + mix.problems()
    return {
        "baseline": b, "mix": m,
        "ratios": {"p50": ratio(m["p50_ms"], b["p50_ms"]), "p99": ratio(m["p99_ms"], b["p99_ms"]),
                   "rate": ratio(rate_m, rate_b)},
        "integrity": check, "onlyInIndex": only_ours, "onlyInFreshBuild": only_fresh,
        "problems": problems,
        "ok": not problems and check == "ok" and not only_ours and not only_fresh,
    }


if __name__ == "__main__":
    raise SystemExit(main())
