"""Tune the default profile's dreaming thresholds by cross-validation on LoCoMo dev (issue 25).

    PYTHONPATH=. nice python scripts/tune_dreaming.py [--cache DIR] [--write]

Each setting of :data:`CV_GRID` replays every LoCoMo dev
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory_core.evaluation import dreaming as dr  # noqa: E402
from memory_core.promotion.policy import tuned  # noqa: E402


def merge_runs(profile: str, runs: Sequence[dr.DreamingRun]) -> dr.DreamingRun:
    """One run pooling ``runs`` (of disjoint conversations): every ask and bullet counted once."""
    out = dr.DreamingRun(profile)
    for r in runs:
        out.conversations += r.conversations
        out.asks += r.asks
        out.saved += r.saved
        out.bullets += r.bullets
        out.junk += r.junk
        out.budget = max(out.budget, r.budget)
        out.junk_bullets += r.junk_bullets
        out.days += r.days
    return out


#: What :func:`cross_validate` tunes: the default policy's recall threshold, the share of a
#: query its bullet line must match and how many queries must choose a line
#: (``min_distinct_queries`` stays 3: 4 saved fewer searches than the reference in every
#: earlier grid, docs/promotion.md section 6).
CV_GRID: dict[str, list[float]] = {"recall_top_k": [0, 3], "min_matching_queries": [1, 2],
                                   "min_match_share": [0.3, 0.4, 0.5]}
#: The junk share a setting may have on the training conversations to be chosen.
MAX_JUNK = 0.05


def choose(runs: Sequence[dr.DreamingRun], floor: float = -1.0) -> int:
    """The index of the best run. Only runs saving more searches than ``floor`` (the
    reference's share on the same conversations) are considered, when any does; among them,
    the most saved searches with junk <= MAX_JUNK, else the least junk."""
    ok = [i for i, r in enumerate(runs) if r.saved_share > floor] or list(range(len(runs)))
    clean = [i for i in ok if runs[i].junk_share <= MAX_JUNK]
    if clean:
        return max(clean, key=lambda i: (runs[i].saved_share, -runs[i].junk_share))
    return min(ok, key=lambda i: (runs[i].junk_share, -runs[i].saved_share))


@dataclass
class DreamingCV:
    """Leave one conversation out: per fold, the setting chosen on the others."""

    settings: list[dict[str, float]]
    #: fold (the held-out conversation) -> index into :attr:`settings`
    chosen: dict[str, int]
    #: the held-out runs pooled (each conversation replayed under settings chosen without it)
    held_out: dr.DreamingRun
    #: every setting on every conversation pooled
    pooled: list[dr.DreamingRun]
    #: the setting chosen on all the conversations (the default's constants)
    final: int


def cross_validate(per_setting: Sequence[dict[str, dr.DreamingRun]],
                   settings: Sequence[dict[str, float]],
                   reference: dict[str, dr.DreamingRun] | None = None) -> DreamingCV:
    """Leave-one-conversation-out over ``per_setting[i][conv]`` (setting i's replay of conv);
    with the ``reference``'s replays, a setting must save more than it on the training ones."""
    convs = sorted(per_setting[0])

    def floor(cs: list[str]) -> float:
        return merge_runs("reference", [reference[c] for c in cs]).saved_share if reference \
            else -1.0

    chosen: dict[str, int] = {}
    held: list[dr.DreamingRun] = []
    for test in convs:
        train = [c for c in convs if c != test]
        chosen[test] = choose([merge_runs("default", [runs[c] for c in train])
                               for runs in per_setting], floor(train))
        held.append(per_setting[chosen[test]][test])
    pooled = [merge_runs("default", [runs[c] for c in convs]) for runs in per_setting]
    return DreamingCV(list(settings), chosen, merge_runs("default", held), pooled,
                      choose(pooled, floor(convs)))



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


def _write(reference: dr.DreamingRun, cv: DreamingCV, settings: list[dict[str, float]]) -> None:
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
            "grid": CV_GRID, "chosen": {c: settings[i] for c, i in cv.chosen.items()},
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
    keys = list(CV_GRID)
    settings = [dict(zip(keys, v, strict=True)) for v in itertools.product(*CV_GRID.values())]
    per_setting = []
    for s in settings:
        name = "default-" + "-".join(f"{k}{v}" for k, v in s.items())
        per_setting.append({c: _cached(args.cache, name, c, **s) for c in convs})
        print(name, "done", file=sys.stderr, flush=True)
    ref_runs = {c: _cached(args.cache, "reference", c) for c in convs}
    reference = merge_runs("reference", [ref_runs[c] for c in convs])
    cv = cross_validate(per_setting, settings, ref_runs)
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
