"""LongMemEval-S as a labelled query set: one agent workspace per question.

The benchmark (Wu et al., ICLR 2025, MIT) gives each question its own haystack of ~50 chat
sessions. Each session is written as a dated diary file of the agent's memory,
``memory/YYYY-MM-DD-<session id>.md``: line 1 ``# Session <id> (<date>)``, then one block per
turn, ``user: text`` (or ``assistant: text``), blank lines between turns and none inside one.
Two variants, named beside every figure:

* ``user`` (``longmemeval-s``): user turns only, as the benchmark's own retrieval runs index;
* ``all`` (``longmemeval-s-all``): every turn, what an agent that keeps its transcripts holds.

The evidence of a question is every line of its ``has_answer`` turns that the variant writes;
a question without any (the user-only variant of an assistant-side question) is skipped, as the
benchmark's averaging skips "no target" questions. Abstention questions (``_abs``) are kept
apart: they measure what an agent is told when nothing in memory answers. Each question is
asked on its own ``question_date``: the "now" its relative dates ("four weeks ago") count from.

Names: ``longmemeval-s[-all][:PATH][#N]``: ``PATH`` the official JSON (gzipped or not; default
``../shared/datasets/longmemeval-s/longmemeval_s_dev.json.gz``), ``#N`` a subset of ``N``
questions stratified by question type (the same ones on every run). Workspaces are generated
once under the evaluation cache (never inside the project: the data is licensed for evaluation).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..base.config import profile_settings
from ..base.dates import asked_ms
from ..base.fileio import atomic_write
from ..base.locations import datasets_dir
from .datasets import DatasetMissing, EvalQuery, Evidence, QuerySet, cache_dir, load_query_set
from .report import EvalReport
from .runner import EvalConfig, Progress, run_eval

DEFAULT_FILE = Path("longmemeval-s") / "longmemeval_s_dev.json.gz"
VARIANTS: dict[str, str] = {"user": "user turns only, one diary file per session",
                            "all": "all turns, one diary file per session"}
NAME = re.compile(r"longmemeval-s(?:-(?P<variant>user|all))?(?::(?P<path>[^#]+))?"
                  r"(?:#(?P<n>\d+))?")
#: Bumped when the written workspace's shape changes (regenerates every workspace).
_LAYOUT = 1


def default_path() -> Path:
    """Where the development half lives (beside the project)."""
    return datasets_dir() / DEFAULT_FILE


def available() -> bool:
    """Whether the default LongMemEval-S file is on this machine."""
    return default_path().is_file()


def read_instances(path: Path) -> list[dict[str, Any]]:
    """The official JSON list (``.json`` or ``.json.gz``); a clear error when it is not one."""
    if not path.is_file():
        raise DatasetMissing(f"LongMemEval-S not found at {path} (the evaluation data lives "
                             "beside the project, in ../shared/datasets)")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise ValueError(f"{path}: not LongMemEval JSON ({e})") from None
    if not isinstance(data, list) or not all(isinstance(x, dict) and "question_id" in x
                                             for x in data):
        raise ValueError(f"{path}: expected a JSON list of questions with question_id")
    return data


def stratified(instances: Sequence[Mapping[str, Any]], n: int) -> list[Mapping[str, Any]]:
    """``n`` questions spread over the question types in proportion (largest remainders),
    evenly spaced within each type in file order: the same subset on every run."""
    if n >= len(instances):
        return list(instances)
    by_type: dict[str, list[Mapping[str, Any]]] = {}
    for x in instances:
        by_type.setdefault(str(x.get("question_type", "")), []).append(x)
    exact = {t: n * len(v) / len(instances) for t, v in by_type.items()}
    take = {t: int(e) for t, e in exact.items()}
    for t in sorted(exact, key=lambda t: (take[t] - exact[t], t))[:n - sum(take.values())]:
        take[t] += 1
    keep = {id(v[int((i + 0.5) * len(v) / take[t])]) for t, v in by_type.items()
            for i in range(take[t])}
    return [x for x in instances if id(x) in keep]


def _session_file(sid: str, date: str) -> str:
    m = re.match(r"(\d{4})/(\d{2})/(\d{2})", date or "")
    day = "-".join(m.groups()) if m else "0000-00-00"
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", sid)
    return f"memory/{day}-{safe}.md"


def render_session(sid: str, date: str, turns: Sequence[Mapping[str, Any]], variant: str
                   ) -> tuple[str, list[int]]:
    """One session as diary text, and the 1-based lines of its ``has_answer`` turns."""
    lines = [f"# Session {sid} ({date})"]
    evidence: list[int] = []
    for t in turns:
        role = str(t.get("role", ""))
        if variant == "user" and role != "user":
            continue
        body = [ln.rstrip() for ln in str(t.get("content", "")).splitlines() if ln.strip()]
        lines.append("")
        first = len(lines) + 1
        lines.extend([f"{role}: {body[0] if body else ''}", *body[1:]])
        if t.get("has_answer"):
            evidence.extend(range(first, len(lines) + 1))
    return "\n".join(lines) + "\n", evidence


def write_workspace(inst: Mapping[str, Any], variant: str, root: Path,
                    doc_ids: dict[str, str] | None = None) -> tuple[Path, list[Evidence]]:
    """Write (once) one question's haystack as a workspace; return it and the evidence.
    ``doc_ids`` collects each file's session id (what a file-level TREC run names)."""
    ws = root / re.sub(r"[^A-Za-z0-9._-]", "_", str(inst["question_id"]))
    files: dict[str, str] = {}
    evidence: list[Evidence] = []
    for sid, date, turns in zip(inst.get("haystack_session_ids") or [],
                                inst.get("haystack_dates") or [],
                                inst.get("haystack_sessions") or [], strict=False):
        path = _session_file(str(sid), str(date))
        text, lines = render_session(str(sid), str(date), turns, variant)
        files[path] = text
        if doc_ids is not None:
            doc_ids[path] = str(sid)
        evidence.extend(Evidence(path, ln) for ln in lines)
    stamp = hashlib.sha256(json.dumps([_LAYOUT, sorted(files.items())]).encode()).hexdigest()
    marker = ws / ".complete"
    if not (marker.is_file() and marker.read_text(encoding="utf-8") == stamp):
        (ws / "memory").mkdir(parents=True, exist_ok=True)
        for old in (ws / "memory").glob("*.md"):
            if f"memory/{old.name}" not in files:
                old.unlink()
        for path, text in files.items():
            atomic_write(ws / path, text.encode("utf-8"), durable=False)
        atomic_write(marker, stamp.encode("utf-8"), durable=False)
    return ws, evidence


def load_longmemeval(name: str) -> QuerySet:
    """The query set named ``longmemeval-s[-all][:PATH][#N]`` (see the module's docstring)."""
    m = NAME.fullmatch(name)
    if not m:
        raise DatasetMissing(f"{name!r}: expected longmemeval-s[-all][:PATH][#N]")
    variant = m.group("variant") or "user"
    path = Path(m.group("path")).expanduser() if m.group("path") else default_path()
    instances: list[Mapping[str, Any]] = list(read_instances(path))
    if m.group("n"):
        instances = stratified(instances, int(m.group("n")))
    tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    root = cache_dir() / "workspaces" / f"longmemeval-s-{variant}-{tag}"
    workspaces: dict[str, Path | None] = {}
    stores: dict[str, Path | None] = {}
    queries: list[EvalQuery] = []
    skipped: dict[str, int] = {}
    doc_ids: dict[str, str] = {}
    for inst in instances:
        qid = str(inst["question_id"])
        abstain = qid.endswith("_abs")
        ws, evidence = write_workspace(inst, variant, root, doc_ids)
        if not evidence and not abstain:
            skipped["no evidence in the variant"] = skipped.get(
                "no evidence in the variant", 0) + 1
            continue
        workspaces[qid] = ws
        stores[qid] = cache_dir() / "stores" / root.name / ws.name
        queries.append(EvalQuery(qid, str(inst.get("question", "")),
                                 str(inst.get("question_type", "")), tuple(evidence), qid,
                                 apart=abstain,
                                 now_ms=asked_ms(inst.get("question_date"))))
    label = f"longmemeval-s-{variant}" + (f"#{m.group('n')}" if m.group("n") else "")
    return QuerySet(label, queries, workspaces, stores, "lines", skipped,
                    f"LongMemEval-S ({path.name}, {len(instances)} questions): "
                    f"{VARIANTS[variant]}", doc_ids, sessions=True)


# =============================================================================== running it

#: What the ranked list turns off: every gate (the list peers publish: 50 results, no floor).
RANKED_OFF: dict[str, Any] = {"max_results": 50, "min_score": 0.0, "abstain_below": 0.0,
                              "relaxed_min_score": 0.0}


def lme_configs(profile: str = "default", provider: str | None = "local") -> list[EvalConfig]:
    """The ranked list (first: its candidate pool is the larger), then what an agent receives
    (the profile's own settings: at most 6 hits, abstention on)."""
    base = profile_settings(profile, provider)
    return [EvalConfig(f"{profile} ranked (gate off, 50)", replace(base, **RANKED_OFF)),
            EvalConfig(f"{profile} agent (its settings)", base)]


def run_longmemeval(n: int | None = None, variant: str = "user", *, profile: str = "default",
                    provider: str | None = None, path: str | None = None,
                    progress: Progress | None = None, executor: str = "serial") -> EvalReport:
    """Evaluate ``profile`` on LongMemEval-S (``n`` questions stratified by type, or all):
    one index per question, the ranked list and the agent's view from one candidate fetch."""
    name = "longmemeval-s" + ("-all" if variant == "all" else "") + (f":{path}" if path else
                                                                        "") + (f"#{n}" if n else "")
    qs = load_query_set(name)
    configs = lme_configs(profile, provider or "local")
    if executor == "ray":
        from .ray_executor import run_eval_ray

        return run_eval_ray(None, qs, configs, progress, profile=profile, provider=provider,
                            audit=False)
    return run_eval(None, qs, configs, progress, profile=profile, provider=provider,
                    audit=False)


def summary_rows(report: EvalReport, variant: str = "user") -> list[dict[str, Any]]:
    """One row per run: the headline figures, with the variant and the question counts."""
    rows = []
    for run in report.runs:
        m = run.metrics
        s = m.get("session", {})
        row: dict[str, Any] = {
            "run": run.label, "variant": VARIANTS.get(variant, variant),
            "questions": m["n_queries"], "recall_any@5": s.get("recall_any@5"),
            "recall_all@5": s.get("recall_all@5"), "ndcg_any@5": s.get("ndcg_any@5"),
            "recall_any@10": s.get("recall_any@10"), "recall_all@10": s.get("recall_all@10"),
            "chunk Success@5": m["chunk"]["success@5"],
            "empty (answerable)": m["zero_result_rate"]}
        if "apart" in m:
            row["abstention questions"] = m["apart"]["n_queries"]
            row["empty (abstention)"] = m["apart"]["zero_result_rate"]
        rows.append(row)
    return rows
