"""Off-topic probes: questions whose right answer is "nothing stored", for abstention.

Four sets are written for this project and kept in ``examples/probes/`` (general-knowledge
questions in English and in Chinese, nonsense strings, and questions a user might ask the demo
team's memory that it does not answer). A fifth kind is another dataset's questions asked of a
workspace they have nothing to do with: XQuAD's English and Chinese questions (Wikipedia
paragraphs) asked of a LoCoMo conversation or of the demo, read from ``../shared/datasets`` at
run time, never copied.

A probe is an :class:`EvalQuery` with no evidence; :func:`probe_set` attaches probes to the
workspaces of a labelled query set, so the evaluator's candidate fetch (and its cache) serves
them like any other query.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from ..base.locations import REPO_ROOT, datasets_dir
from .datasets import EvalQuery, QuerySet

PROBE_DIR = REPO_ROOT / "examples" / "probes"
#: The project's own probe files, by kind.
OWN_KINDS: tuple[str, ...] = ("general-en", "general-zh", "nonsense", "demo-no-answer")
#: Another dataset's questions: XQuAD (en, zh), every ``XQUAD_STEP``-th question.
XQUAD_KINDS: dict[str, str] = {"xquad-en": "xquad/beir-en", "xquad-zh": "xquad/beir-zh"}
XQUAD_STEP = 8


@dataclass(frozen=True)
class Probe:
    """One off-topic query: ``kind`` names its set."""

    qid: str
    query: str
    kind: str

    def part(self, k: int) -> int:
        """Its fold among ``k`` (a stable hash of its id): probes are held out like queries."""
        return int(hashlib.sha1(self.qid.encode("utf-8")).hexdigest()[:8], 16) % k


def load_probes(kinds: Sequence[str] | None = None) -> list[Probe]:
    """The probes of ``kinds`` (default: every kind whose data exists here)."""
    out: list[Probe] = []
    for kind in kinds or (*OWN_KINDS, *XQUAD_KINDS):
        if kind in XQUAD_KINDS:
            out.extend(_xquad(kind))
            continue
        path = PROBE_DIR / f"{kind}.jsonl"
        if not path.is_file():
            raise ValueError(f"no probe set {kind!r} ({path} not found)")
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out.append(Probe(str(rec["qid"]), str(rec["query"]), kind))
    return out


def _xquad(kind: str) -> list[Probe]:
    path = datasets_dir() / XQUAD_KINDS[kind] / "queries.jsonl"
    if not path.is_file():
        return []  # the shared data is absent: that kind is left out
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if line.strip() and i % XQUAD_STEP == 0:
            rec = json.loads(line)
            out.append(Probe(f"{kind}-{rec['_id']}", str(rec["text"]), kind))
    return out


def probe_set(base: QuerySet, probes: Sequence[Probe]) -> QuerySet:
    """``probes`` asked of every workspace of ``base`` (ids ``<workspace>/<probe id>``)."""
    queries = [EvalQuery(f"{ws}/{p.qid}" if ws else p.qid, p.query, p.kind, (), ws)
               for ws in base.workspaces for p in probes]
    return QuerySet(f"probes on {base.name}", queries, dict(base.workspaces),
                    dict(base.store_dirs), base.level, {}, f"off-topic probes on {base.name}")


def probe_of(query: EvalQuery) -> str:
    """The probe id of a query made by :func:`probe_set`."""
    return query.qid.split("/", 1)[-1]


__all__ = ["OWN_KINDS", "PROBE_DIR", "XQUAD_KINDS", "Probe", "load_probes", "probe_of",
           "probe_set"]
