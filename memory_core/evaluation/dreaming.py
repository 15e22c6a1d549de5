"""The dreaming evaluation (issue 25 item 1): does promotion keep what the agent keeps needing?

A LoCoMo conversation is replayed day by day as an agent would live it, in a scratch
workspace outside the project (removed afterwards; the dataset is only read): on each session
day its diary is written, then every question whose evidence lies in earlier sessions and that
is due is asked through the real ``memory_search`` (recorded as a recall), then the night runs
(Light and REM, the deep phase's candidates under the default gates, applied under the
``MEMORY.md`` budget). A question is due on the three session days after its latest evidence
(a fact needed again over the next few conversations: the fewest asks that can give the three
signals promotion's gates want).

Reported per profile: the share of asks whose evidence lines were all in ``MEMORY.md`` when
asked (the search promotion saved the agent), the share of promoted bullets that are evidence
for no question (junk), ``MEMORY.md``'s size against its budget on every day, and the recall
store's size and the share of it the agent's own searches fed.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..base.fileio import iter_jsonl
from ..base.locations import datasets_dir
from ..base.text import utf16_len

ASKS_PER_QUESTION = 3
#: The held-out evaluation ``scripts/tune_dreaming.py --write`` saves (package data).
SAVED_FILE = Path(__file__).with_name("dreaming_saved.json")


@dataclass
class DreamingRun:
    """One profile's replay of one or more conversations."""

    profile: str
    conversations: list[str] = field(default_factory=list)
    asks: int = 0
    saved: int = 0
    bullets: int = 0
    junk: int = 0
    budget: int = 0
    #: the junk bullets' text, as written (to read what the policy lets through)
    junk_bullets: list[str] = field(default_factory=list)
    #: per conversation, per day: (day, MEMORY.md length, store size, share recalled)
    days: list[tuple[str, str, int, int, float]] = field(default_factory=list)

    @property
    def saved_share(self) -> float:
        return self.saved / self.asks if self.asks else 0.0

    @property
    def junk_share(self) -> float:
        return self.junk / self.bullets if self.bullets else 0.0

    @property
    def within_budget(self) -> bool:
        return all(n <= self.budget for _, _, n, _, _ in self.days)

    def to_dict(self) -> dict[str, Any]:
        sizes = [n for _, _, n, _, _ in self.days]
        stores = [s for _, _, _, s, _ in self.days]
        last = {c: o for c, _, _, _, o in self.days}  # each conversation's last night
        return {"profile": self.profile, "conversations": self.conversations,
                "asks": self.asks, "saved": self.saved, "savedShare": self.saved_share,
                "bullets": self.bullets, "junk": self.junk, "junkShare": self.junk_share,
                "budget": self.budget, "withinBudget": self.within_budget,
                "maxMemoryChars": max(sizes, default=0), "maxStore": max(stores, default=0),
                "finalOwnShare": sum(last.values()) / len(last) if last else 0.0,
                "junkBullets": self.junk_bullets,
                "days": [{"conversation": c, "day": d, "memoryChars": n, "store": s,
                          "ownShare": o} for c, d, n, s, o in self.days]}


def locomo_root() -> Path | None:
    """``../shared/datasets/locomo-dev`` when it is there (its Markdown shape)."""
    root = datasets_dir() / "locomo-dev"
    return root if (root / "queries-markdown.jsonl").is_file() else None


def conversations() -> list[str]:
    """LoCoMo dev's conversations (``[]`` when the dataset is not there)."""
    root = locomo_root()
    return sorted(p.name for p in (root / "markdown").iterdir()) if root else []


def _questions(root: Path, conv: str) -> list[dict[str, Any]]:
    out = []
    for line in iter_jsonl(root / "queries-markdown.jsonl"):
        rec = line.value
        if (isinstance(rec, dict) and rec.get("workspace") == conv and rec.get("relevant")
                and not rec.get("adversarial")):
            out.append(rec)
    return out


def _replay_one(root: Path, conv: str, profile: str, provider: str, run: DreamingRun,
                progress: Callable[[str], None] | None, max_days: int | None = None) -> None:
    from .. import promotion as pr
    from ..index import MemoryIndex
    from ..promotion.model import collapse

    src = root / "markdown" / conv / "memory"
    diaries = sorted(p.name for p in src.iterdir() if p.suffix == ".md")[:max_days]
    days = [d.removesuffix(".md") for d in diaries]
    lines = {d: (src / d).read_text(encoding="utf-8").split("\n") for d in diaries}
    questions = _questions(root, conv)
    evidence_text: dict[str, list[str]] = {}
    due: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        texts = []
        for r in q["relevant"]:
            name = Path(r["path"]).name
            if name in lines and 1 <= int(r["line"]) <= len(lines[name]):
                texts.append(collapse(lines[name][int(r["line"]) - 1]))
        last = max(Path(r["path"]).stem for r in q["relevant"])
        if not texts or last not in days:
            continue
        evidence_text[q["qid"]] = texts
        i = days.index(last)
        for d in days[i + 1:i + 1 + ASKS_PER_QUESTION]:
            due.setdefault(d, []).append(q)
    all_evidence = {t for ts in evidence_text.values() for t in ts}
    scratch = Path(tempfile.mkdtemp(prefix=f"dreaming-{conv}-{profile}-"))
    try:
        ws = scratch / "ws"
        (ws / "memory").mkdir(parents=True)
        with MemoryIndex.open(ws, provider=provider, profile=profile) as idx:
            for day, name in zip(days, diaries, strict=True):
                noon = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
                (ws / "memory" / name).write_text("\n".join(lines[name]), encoding="utf-8")
                idx.sync()
                memory = collapse((ws / "MEMORY.md").read_text(encoding="utf-8")
                                   if (ws / "MEMORY.md").exists() else "")
                for q in due.get(day, []):
                    run.asks += 1
                    run.saved += all(t in memory for t in evidence_text[q["qid"]])
                    pr.record_search(idx, q["query"], idx.search(q["query"]).hits, now=noon)
                night = noon + timedelta(hours=15)
                pr.run_sweep(idx, now=night)
                passed = [c for c in pr.list_candidates(idx, now=night,
                                                        check_duplicates_of="none") if c.passed]
                if passed:
                    plan = pr.preview_apply(idx, passed, now=night)
                    run.budget = plan.budget
                    for e in plan.entries:
                        run.bullets += 1
                        body = collapse(e.bullet)
                        if not any(t in body for t in all_evidence):
                            run.junk += 1
                            run.junk_bullets.append(e.bullet)
                    if plan.entries:
                        pr.apply(idx, plan)
                text = ((ws / "MEMORY.md").read_text(encoding="utf-8")
                        if (ws / "MEMORY.md").exists() else "")
                with pr.state_of(idx) as st:
                    entries = st.recall_entries()
                own = sum(e["recall_count"] > 0 for e in entries)
                run.days.append((conv, day, utf16_len(text), len(entries),
                                 own / len(entries) if entries else 0.0))
                if progress:
                    progress(f"{profile} {conv} {day}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_dreaming_eval(conversations: Sequence[str] | None = None, *,
                      profiles: Sequence[str] = ("reference", "default"),
                      provider: str = "none",
                      progress: Callable[[str], None] | None = None,
                      max_days: int | None = None) -> list[DreamingRun]:
    """Replay ``conversations`` (default: every LoCoMo dev conversation) under each profile
    (only each one's first ``max_days`` session days when given: a quick look)."""
    root = locomo_root()
    if root is None:
        raise FileNotFoundError("LoCoMo dev is not there (../shared/datasets/locomo-dev)")
    convs = list(conversations or sorted(p.name for p in (root / "markdown").iterdir()))
    runs = []
    for profile in profiles:
        run = DreamingRun(profile, convs)
        from ..promotion.model import BUDGET_RESERVE_CHARS, MEMORY_FILE_MAX_CHARS

        run.budget = MEMORY_FILE_MAX_CHARS - BUDGET_RESERVE_CHARS
        for conv in convs:
            _replay_one(root, conv, profile, provider, run, progress, max_days)
        runs.append(run)
    return runs


def summary(run: DreamingRun) -> dict[str, str | int]:
    """One row of the evaluation's table, formatted (the CLI, the docs, the Promotion page)."""
    d = run.to_dict()
    return {"profile": run.profile, "asks": run.asks, "saved searches": f"{run.saved_share:.1%}",
            "promoted bullets": run.bullets, "junk": f"{run.junk_share:.1%}",
            "max MEMORY.md / budget": f"{d['maxMemoryChars']} / {run.budget}",
            "within budget every day": "yes" if run.within_budget else "no",
            "max store": d["maxStore"], "own-query share (end)": f"{d['finalOwnShare']:.1%}"}


def dreaming_table(runs: Sequence[DreamingRun]) -> str:
    """The Markdown table of docs/promotion.md."""
    rows: list[str] = []
    for r in runs:
        row = summary(r)
        if not rows:
            rows += ["| " + " | ".join(row) + " |", "|" + "---|" * len(row)]
        rows.append("| " + " | ".join(str(v) for v in row.values()) + " |")
    return "\n".join(rows) + "\n"


def run_from_dict(d: dict[str, Any]) -> DreamingRun:
    """The :class:`DreamingRun` that :meth:`DreamingRun.to_dict` wrote (a saved evaluation)."""
    rows = d["dayRows"] if "dayRows" in d else [
        (x["conversation"], x["day"], x["memoryChars"], x["store"], x["ownShare"])
        for x in d["days"]]
    return DreamingRun(d["profile"], list(d["conversations"]), d["asks"], d["saved"],
                       d["bullets"], d["junk"], d["budget"], list(d.get("junkBullets", [])),
                       [(str(c), str(day), int(n), int(st), float(o))
                        for c, day, n, st, o in rows])


def saved_evaluation() -> tuple[list[DreamingRun], dict[str, Any]]:
    """The held-out evaluation docs/promotion.md reports, as ``scripts/tune_dreaming.py
    --write`` saved it (figures only, no dataset text) to the package data file
    ``dreaming_saved.json``: the runs and how they were made."""
    data = json.loads(SAVED_FILE.read_text(encoding="utf-8"))
    return [run_from_dict(r) for r in data["runs"]], dict(data["meta"])
