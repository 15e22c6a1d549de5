"""Tune the default profile's dreaming thresholds by cross-validation on LoCoMo dev (issue 25).

    PYTHONPATH=. nice python scripts/tune_dreaming.py [--cache DIR] [--write]

Each setting of ``memory_core.evaluation.dreaming.CV_GRID`` replays every LoCoMo dev
conversation in the default profile (keyword-only; each replay is cached in ``--cache`` by
setting and conversation, so a rerun only replays what is missing), and the reference is
replayed once. Leave one conversation out: among the settings saving more searches than
the reference on the other four, the one with the most saved searches and junk ≤ 5 % (else
the least junk) is scored on the held-out one. Prints the held-out table for
docs/promotion.md and, with ``--write``, saves its figures (no dataset text) to
``memory_core/evaluation/dreaming_saved.json``, the evaluation the Promotion page and the
notebook show without the dataset.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.evaluation import dreaming as dr  # noqa: E402
from memory_core.promotion.policy import tuned  # noqa: E402


def _cached(cache: Path, name: str, conv: str,
            **setting: float) -> dr.DreamingRun:
    path = cache / f"{name}-{conv}.json"
    if path.is_file():
        return dr.run_from_dict(json.loads(path.read_text(encoding="utf-8")))
    profile = "reference" if name == "reference" else "default"
    with tuned(**setting):
        (run,) = dr.run_dreaming_eval([conv], profiles=(profile,))
    path.write_text(json.dumps(run.to_dict()), encoding="utf-8")
    return run


def _write(reference: dr.DreamingRun, cv: dr.DreamingCV, settings: list[dict[str, float]]) -> None:
    runs = []
    for r in (reference, cv.held_out):
        d = r.to_dict()
        d.pop("junkBullets")  # dataset text stays in ../shared
        # one compact row a night (run_from_dict reads both shapes)
        d["dayRows"] = [[x["conversation"], x["day"], x["memoryChars"], x["store"],
                         round(x["ownShare"], 4)] for x in d.pop("days")]
        runs.append(d)
    meta = {"dataset": "LoCoMo dev (Markdown), 5 conversations", "provider": "none",
            "heldOut": "leave one conversation out; the default's thresholds chosen on the "
                       "other four",
            "grid": dr.CV_GRID, "chosen": {c: settings[i] for c, i in cv.chosen.items()},
            "final": settings[cv.final]}
    out = dr.SAVED_FILE
    out.write_text(json.dumps({"meta": meta, "runs": runs}, indent=1, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    print("wrote", out.relative_to(ROOT), file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path("/tmp/dreaming-cv"))
    ap.add_argument("--write", action="store_true",
                    help="save the held-out figures to memory_core/evaluation/dreaming_saved.json")
    args = ap.parse_args()
    root = dr.locomo_root()
    if root is None:
        print("tune_dreaming: LoCoMo dev is not there (../shared/datasets/locomo-dev)",
              file=sys.stderr)
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    convs = sorted(p.name for p in (root / "markdown").iterdir())
    keys = list(dr.CV_GRID)
    settings = [dict(zip(keys, v, strict=True)) for v in itertools.product(*dr.CV_GRID.values())]
    per_setting = []
    for s in settings:
        name = "default-" + "-".join(f"{k}{v}" for k, v in s.items())
        per_setting.append({c: _cached(args.cache, name, c, **s) for c in convs})
        print(name, "done", file=sys.stderr, flush=True)
    ref_runs = {c: _cached(args.cache, "reference", c) for c in convs}
    reference = dr.merge_runs("reference", [ref_runs[c] for c in convs])
    cv = dr.cross_validate(per_setting, settings, ref_runs)
    print("per fold:", {c: settings[i] for c, i in cv.chosen.items()})
    for s, r in zip(settings, cv.pooled, strict=True):
        print(f"  {s}: saved {r.saved_share:.1%} junk {r.junk_share:.1%} ({r.bullets} bullets)")
    print("the default's constants (chosen on all five):", settings[cv.final])
    print(dr.dreaming_table([reference, cv.held_out]))
    if args.write:
        _write(reference, cv, settings)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
