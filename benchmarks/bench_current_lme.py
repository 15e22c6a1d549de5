"""LongMemEval-S (dev half) knowledge-update and temporal-reasoning questions with the
``current`` step off and on (issue #34), keyword-only (provider ``none``: no model, minutes).

    python benchmarks/bench_current_lme.py [--types knowledge-update,temporal-reasoning] [--limit N]

Reads ``../shared/datasets/longmemeval-s/longmemeval_s_dev.json.gz`` (never copied). Each
question's haystack becomes a workspace of one Markdown diary per session,
``memory/<session date>-<n>.md``, holding the session's **user turns** (the official runs index
user turns only), one per line; the question is asked as written. A ranked list of chunks is
mapped to sessions by growing the cut until k distinct sessions are covered (the official
rule); ``recall_any@k`` / ``recall_all@k`` over the gold ``answer_session_ids``, abstention
questions (``_abs``) left out. Both columns fuse the same fetched candidates.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import tempfile
from dataclasses import replace
from pathlib import Path

from memory_core import MemoryIndex
from memory_core.read.fusion import fuse

DATA = (Path(__file__).resolve().parent.parent.parent / "shared" / "datasets" / "longmemeval-s"
        / "longmemeval_s_dev.json.gz")


def _day(s: str) -> str:
    m = re.match(r"(\d{4})/(\d{2})/(\d{2})", s)
    return f"{m.group(1)}-{m.group(2)}-{m.group(3)}" if m else "2000-01-01"


def _sessions(ranked: list[str], k: int) -> list[str]:
    out: list[str] = []
    for sid in ranked:
        if sid not in out:
            out.append(sid)
        if len(out) == k:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--types", default="knowledge-update,temporal-reasoning")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    if not DATA.exists():
        raise SystemExit(f"not found: {DATA}")
    items = [q for q in json.loads(gzip.decompress(DATA.read_bytes()))
             if q["question_type"] in a.types.split(",") and not q["question_id"].endswith("_abs")]
    # the two types interleaved, so that a run cut short still measures both
    ku = [q for q in items if q["question_type"] == "knowledge-update"]
    tr = [q for q in items if q["question_type"] != "knowledge-update"]
    items = [q for pair in zip(ku, tr, strict=False) for q in pair] + ku[len(tr):] + tr[len(ku):]
    if a.limit:
        items = items[: a.limit]
    totals: dict[str, dict[str, dict[str, float]]] = {}
    for q in items:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp)
            (ws / "memory").mkdir()
            file_sid: dict[str, str] = {}
            for n, (sid, day, turns) in enumerate(zip(q["haystack_session_ids"],
                                                      q["haystack_dates"],
                                                      q["haystack_sessions"], strict=True)):
                rel = f"memory/{_day(day)}-{n:03d}.md"
                lines = [" ".join(t["content"].split()) for t in turns if t["role"] == "user"]
                (ws / rel).write_text(f"# {_day(day)}\n\n" + "\n".join(lines) + "\n",
                                      encoding="utf-8")
                file_sid[rel] = sid
            with MemoryIndex.open(ws, provider="none") as idx:
                idx.sync()
                base = idx.settings()
                c = idx.candidates(q["question"], settings=replace(base, max_results=50))
            gold = set(q["answer_session_ids"])
            t = totals.setdefault(q["question_type"], {})
            for label, s in (("off", replace(base, max_results=50, supersession_penalty=0.0,
                                              current_boost=0.0)),
                             ("on", replace(base, max_results=50))):
                ranked = [file_sid[h.path] for h in fuse(c, s).hits if h.path in file_sid]
                row = t.setdefault(label, {"n": 0, "any@1": 0, "any@5": 0, "all@5": 0})
                row["n"] += 1
                for k in (1, 5):
                    top = set(_sessions(ranked, k))
                    row[f"any@{k}"] += bool(top & gold)
                    if k == 5:
                        row["all@5"] += gold <= top
        if sum(cols["on"]["n"] for cols in totals.values()) % 10 == 0:
            _report(totals)  # a running total (a loaded machine may stop the run early)
    _report(totals)


def _report(totals: dict[str, dict[str, dict[str, float]]]) -> None:
    for qtype, cols in totals.items():
        for label, r in cols.items():
            n = r["n"]
            print(f"{qtype:20s} {label:3s} n={n:3d} recall_any@1 {r['any@1'] / n:.3f} "
                  f"recall_any@5 {r['any@5'] / n:.3f} recall_all@5 {r['all@5'] / n:.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
