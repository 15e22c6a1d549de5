"""TREC run and qrels files, BEIR qrels TSV and query files: the IR community's exchange formats.

A *run* is ``qid Q0 docid rank score tag`` per line; *qrels* are ``qid iter docid relevance``
(TREC) or ``query-id<TAB>corpus-id<TAB>score`` with a header (BEIR). Query texts come as our JSONL
(``{qid, query}``), BEIR ``queries.jsonl`` (``{_id, text}``), TREC topics (``<top> <num>
<title>``) or a ``qid<TAB>text`` file. What tools such as ``ranx``, ``ir-measures`` and
``trec_eval`` read and write, so a run of ours can be set beside anyone's.

Document ids: a BEIR document's own id; a workspace file's path (file level) or
``path#Lstart-Lend`` (a chunk); a labelled line is ``path#L<line>``. :func:`evidence_of` turns a
judged document id back into the :class:`~.datasets.Evidence` the protocol's metrics read.
"""

from __future__ import annotations

import json
import math
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..base.fileio import atomic_write
from .datasets import Evidence

#: qid → ranked ``(docid, score)``, best first.
Run = dict[str, list[tuple[str, float]]]
#: qid → docid → graded relevance (0 = judged not relevant).
Qrels = dict[str, dict[str, int]]

#: The smallest step between two scores of a written run: ties are nudged apart by it, so every
#: tool (which sorts by score, breaking ties each its own way) reads back our order.
SCORE_STEP = 1e-6

CHUNK_ID = re.compile(r"^(?P<path>.+?)#L(?P<start>\d+)(?:-L?(?P<end>\d+))?$")


class FormatError(ValueError):
    """A file that is not the format it claims to be; the message names ``file:line``."""


# =============================================================================== runs


def format_run(run: Mapping[str, Sequence[tuple[str, float]]], tag: str = "memory-core") -> str:
    """``run`` as TREC run text; scores made strictly decreasing within each query."""
    tag = re.sub(r"\s+", "_", tag.strip()) or "memory-core"
    lines = []
    for qid, ranked in run.items():
        prev: float | None = None
        for rank, (doc, score) in enumerate(ranked, 1):
            s = float(score)
            if prev is not None and s >= prev - SCORE_STEP / 2:
                s = prev - SCORE_STEP
            prev = s
            lines.append(f"{_token(qid, 'query id')} Q0 {_token(doc, 'document id')} {rank} "
                         f"{s:.6f} {tag}")
    return "\n".join(lines) + ("\n" if lines else "")


def _token(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{what} {value!r} cannot be written to a TREC file (empty or has "
                         "white space)")
    return value


def write_run(path: str | os.PathLike[str], run: Mapping[str, Sequence[tuple[str, float]]],
              tag: str = "memory-core") -> Path:
    """Write ``run`` as a TREC run file (atomically); return its path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(p, format_run(run, tag).encode("utf-8"), durable=False, mode=0o644)
    return p


def read_run(path: str | os.PathLike[str]) -> Run:
    """A TREC run file: each query's documents by score (descending; file order breaks ties)."""
    rows: dict[str, list[tuple[float, int, str]]] = {}
    for n, parts in _lines(path):
        if len(parts) != 6:
            raise FormatError(f"{path}:{n}: a TREC run line has 6 fields (qid Q0 docid rank "
                              f"score tag), this one has {len(parts)}")
        try:
            score = float(parts[4])
        except ValueError:
            raise FormatError(f"{path}:{n}: score {parts[4]!r} is not a number") from None
        if math.isnan(score):
            raise FormatError(f"{path}:{n}: score {parts[4]!r} is not a number")
        rows.setdefault(parts[0], []).append((score, n, parts[2]))
    out: Run = {}
    for qid, items in rows.items():
        best: dict[str, float] = {}
        for score, _, doc in sorted(items, key=lambda t: (-t[0], t[1])):
            best.setdefault(doc, score)  # a document listed twice counts at its best place
        out[qid] = list(best.items())
    return out


# =============================================================================== qrels


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """TREC qrels (``qid iter docid rel``) or BEIR TSV (``query-id corpus-id score``)."""
    out: Qrels = {}
    for n, parts in _lines(path):
        if n == 1 and parts[:2] == ["query-id", "corpus-id"]:
            continue  # BEIR's header
        if len(parts) == 4:
            qid, doc, raw = parts[0], parts[2], parts[3]
        elif len(parts) == 3:
            qid, doc, raw = parts
        else:
            raise FormatError(f"{path}:{n}: a qrels line has 4 fields (TREC: qid iter docid "
                              f"relevance) or 3 (BEIR: query-id corpus-id score), this one has "
                              f"{len(parts)}")
        try:
            grade = float(raw)
        except ValueError:
            raise FormatError(f"{path}:{n}: relevance {raw!r} is not a number") from None
        if not math.isfinite(grade) or not grade.is_integer():
            raise FormatError(f"{path}:{n}: relevance {raw!r} is not a whole number (a grade "
                              "such as 0, 1, 2)")
        rel = int(grade)
        out.setdefault(qid, {})[doc] = rel
    return out


def format_qrels(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """``qrels`` as TREC qrels text (``qid 0 docid rel``)."""
    lines = [f"{_token(q, 'query id')} 0 {_token(d, 'document id')} {int(r)}"
             for q, docs in qrels.items() for d, r in docs.items()]
    return "\n".join(lines) + ("\n" if lines else "")


def write_qrels(path: str | os.PathLike[str], qrels: Mapping[str, Mapping[str, int]]) -> Path:
    """Write ``qrels`` as a TREC qrels file (atomically); return its path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(p, format_qrels(qrels).encode("utf-8"), durable=False, mode=0o644)
    return p


# =============================================================================== topics


def read_topics(path: str | os.PathLike[str]) -> dict[str, str]:
    """Query texts by qid: our JSONL, BEIR ``queries.jsonl``, TREC topics, or ``qid<TAB>text``."""
    p = Path(path)
    text = _text(p)
    stripped = text.lstrip()
    if stripped.startswith("<top>") or "<num>" in text[:2000]:
        return _trec_topics(text)
    out: dict[str, str] = {}
    for n, line in enumerate(_split(text), 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise FormatError(f"{p}:{n}: {e.msg}") from None
            qid = rec.get("qid", rec.get("_id")) if isinstance(rec, dict) else None
            query = (rec.get("query", rec.get("text")) if isinstance(rec, dict) else None)
            if qid is None or not isinstance(query, str):
                raise FormatError(f"{p}:{n}: a query line needs qid (or _id) and query (or "
                                  "text)")
            out[str(qid)] = query
        elif "\t" in line:
            qid, query = line.split("\t", 1)
            out[qid.strip()] = query.strip()
        else:
            raise FormatError(f"{p}:{n}: not a JSON object, a TREC topic or qid<TAB>text")
    return out


def _trec_topics(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for block in re.findall(r"<top>(.*?)</top>", text, flags=re.S):
        num = re.search(r"<num>\s*(?:Number:)?\s*(\S+)", block)
        title = re.search(r"<title>\s*(?:Topic:)?\s*(.*?)\s*(?=<|\Z)", block, flags=re.S)
        if num and title:
            out[num.group(1)] = " ".join(title.group(1).split())
    return out


# =============================================================================== ids


def path_id(path: str) -> str:
    """A workspace path as a document id: TREC fields are split on white space, so every white
    space character of a path (a space, a tab, a no-break or ideographic space…) is written
    as its UTF-8 ``%XX`` bytes (``%20``), and ``%`` itself as ``%25``."""
    path = path.replace("%", "%25")
    if not any(c.isspace() for c in path):
        return path
    return "".join(urllib.parse.quote(c, safe="") if c.isspace() else c for c in path)


def _unquote(docid: str) -> str:
    return urllib.parse.unquote(docid) if "%" in docid else docid


def chunk_docid(path: str, start: int, end: int) -> str:
    """The document id of a chunk: ``path#Lstart-Lend``."""
    return f"{path_id(path)}#L{start}-L{end}"


def evidence_of(docid: str) -> Evidence:
    """The judged unit a document id names: a file, a line (``#L12``) or a chunk's middle line
    (``#L10-L20``: the chunk the label was given to, and its neighbours that hold that line)."""
    m = CHUNK_ID.match(docid)
    if not m:
        return Evidence(_unquote(docid))
    start = int(m.group("start"))
    end = int(m.group("end") or start)
    return Evidence(_unquote(m.group("path")), (start + end) // 2)


def docid_of_evidence(ev: Evidence) -> str:
    """The qrels document id of a judged unit (``path`` or ``path#L<line>``)."""
    return path_id(ev.path) if ev.line is None else f"{path_id(ev.path)}#L{ev.line}"


def _text(p: Path) -> str:
    """A run, qrels or topics file's text; a BOM (BEIR TSVs saved by Excel) is not part of the
    first field."""
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise FormatError(f"{p}: not UTF-8 text") from None


def _split(text: str) -> list[str]:
    """Lines as the formats mean them: split at ``\n`` only (``splitlines`` would also split
    inside a query at U+2028, NEL or a form feed, and shift every later line number)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


_FIELD_SEP = re.compile(r"[ \t]+")


def _lines(path: str | os.PathLike[str]) -> list[tuple[int, list[str]]]:
    text = _text(Path(path))
    return [(n, _FIELD_SEP.split(line.strip(" \t"))) for n, line in enumerate(_split(text), 1)
            if line.strip(" \t")]

