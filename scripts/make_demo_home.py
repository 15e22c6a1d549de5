"""Write ``examples/demo-home/``: the rich demo, an OpenClaw home (``~/.openclaw`` as OpenClaw lays
it out) around a workspace of a few hundred chunks, with its labelled queries.

    python scripts/make_demo_home.py          # rewrites examples/demo-home* (deterministic)
    python scripts/make_demo_home.py DIR      # the same files under DIR

The home holds ``openclaw.json``, the agent's ``workspace/`` and its transcripts in
``agents/main/sessions/``. The workspace is the small demo (``examples/demo-workspace``, whose
files are copied unchanged, so its queries still hold) plus six months of generated diaries in
English and Chinese, notes and transcripts (the text is in :mod:`demo_home_content`). The
transcripts' ``memory_search`` results are real: each call is run, when the file is written,
by this engine's reference profile, keyword-only (what an agent without an embedding provider
got), on the memory as it stood that day (the diaries up to the call's date), so the Real
queries page has a "then" to compare with "now".

Also written: ``examples/demo-home-queries.jsonl`` (the labelled queries: the small demo's 27
with their transcript paths as the home cites them, and the new ones, every kind),
``examples/demo-home-labels/`` (the same as queries + TREC qrels) and
``examples/demo-home-no-answer.jsonl`` (questions the memory does not answer).
Same input, same output: the random choices are seeded and every time stamp is fixed.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import demo_home_content as content

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SMALL = EXAMPLES / "demo-workspace"
#: What is written, relative to the output folder (``examples/``).
HOME, QUERIES, LABELS, NO_ANSWER = ("demo-home", "demo-home-queries.jsonl", "demo-home-labels",
                                    "demo-home-no-answer.jsonl")
AGENT = "main"
SEED = 20261201
FIRST_DAY, LAST_DAY = dt.date(2026, 6, 1), dt.date(2026, 11, 28)

OPENCLAW_JSON = """// OpenClaw configuration of the demo agent (fictional, written for Memory
// Workbench).
// Laid out as ~/.openclaw: this file, the agent's workspace and agents/main/sessions/.
{
  agents: {
    defaults: {
      workspace: "workspace",            // relative to this folder
      memorySearch: {
        sources: ["memory", "sessions"],
        experimental: { sessionMemory: true },   // index the transcripts too
        extraPaths: ["notes"],
        query: { maxResults: 6, minScore: 0.35 },
      },
    },
    list: [{ id: "main", default: true, name: "pipeline assistant" }],
  },
}
"""

# The workspace's own settings for the workbench, so that ``-w examples/demo-home/workspace``
# reads what the home does (the agent's transcripts, cited as the home cites them, and notes/).
# Only what a bare workspace lacks: the rest (sources, search) comes from openclaw.json, which
# the workbench's Home page then names as its origin.
WORKSPACE_TOML = """# Memory Workbench settings: what ../openclaw.json gives the home, for the
# workspace opened alone (-w): the agent's transcripts (cited sessions/main/<file>)
# and notes/.
[sources]
sessions_dir = "../agents/main/sessions"
sessions_agent = "main"
extra_paths = [{ path = "notes", pattern = "**/*.md" }]
"""


def _marked(text: str) -> tuple[list[str], list[int]]:
    """Lines of ``text`` with the ``@`` evidence marks taken off, and the marked lines (0-based)."""
    lines, marks = [], []
    for i, line in enumerate(text.splitlines()):
        if line.startswith("@"):
            marks.append(i)
            line = line[1:]
        lines.append(line)
    return lines, marks


def _fill(template: str, rng: random.Random) -> str:
    picks = {k: rng.choice(v) for k, v in content.SLOTS.items()}
    return template.format(**picks)


def copy_small(ws: Path, sessions: Path) -> None:
    """The small demo's files, unchanged (its transcripts go to the agent's sessions folder)."""
    for src in sorted(SMALL.rglob("*")):
        rel = src.relative_to(SMALL)
        if not src.is_file() or rel.parts[0] in (".memory",) or rel.name == "memory-workbench.toml":
            continue
        dest = sessions / rel.name if rel.parts[0] == "sessions" else ws / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


def write_diaries(ws: Path, rng: random.Random) -> list[dict[str, Any]]:
    """Everyday diaries on the weekdays the small demo has none, with the planted facts."""
    taken = {p.stem for p in (SMALL / "memory").glob("*.md")}
    planted: dict[str, list[tuple[str, str, list[tuple[str, str]]]]] = {}
    for day, lang, text, qs in content.PLANTED:
        assert day not in taken, day
        planted.setdefault(day, []).append((lang, text, qs))
    days = {FIRST_DAY + dt.timedelta(n) for n in range((LAST_DAY - FIRST_DAY).days + 1)}
    days = {d for d in days if d.weekday() < 5 and d.isoformat() not in taken}
    days |= {dt.date.fromisoformat(d) for d in planted}
    labels: list[dict[str, Any]] = []
    for day in sorted(days):
        iso = day.isoformat()
        own = planted.get(iso, [])
        lang = own[0][0] if own else ("zh" if rng.random() < 0.3 else "en")
        pool = content.ZH_SECTIONS if lang == "zh" else content.EN_SECTIONS
        lines = [f"# {iso}", ""]
        for template in rng.sample(pool, rng.choice((6, 7, 7, 8, 9))):
            lines += [*_fill(template, rng).splitlines(), ""]
        for _, text, qs in own:
            body, marks = _marked(text)
            at = len(lines)
            lines += [*body, ""]
            for query, kind in qs:
                labels.append({"query": query, "category": kind, "relevant": [
                    {"path": f"memory/{iso}.md", "line": at + m + 1} for m in marks]})
        (ws / "memory" / f"{iso}.md").write_text("\n".join(lines).rstrip() + "\n",
                                                 encoding="utf-8")
    return labels


def write_notes(ws: Path) -> list[dict[str, Any]]:
    labels = []
    for rel, text, qs in content.NOTES:
        lines, marks = _marked(text)
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
        for query, kind in qs:
            labels.append({"query": query, "category": kind,
                           "relevant": [{"path": rel, "line": m + 1} for m in marks]})
    return labels


class _Then:
    """The reference profile, keyword-only, on the memory as it stood on a given day."""

    def __init__(self, ws: Path, tmp: Path) -> None:
        self.ws, self.tmp = ws, tmp
        self.open: dict[str, Any] = {}

    def search(self, day: str, query: str, args: dict[str, Any]) -> dict[str, Any]:
        from memory_core import MemoryIndex, tools

        if day not in self.open:
            snap = self.tmp / day
            for src in sorted(self.ws.rglob("*.md")):
                rel = src.relative_to(self.ws)
                if rel.parts[0] == "memory" and rel.stem[:4].isdigit() and rel.stem > day:
                    continue
                (snap / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, snap / rel)
            idx = MemoryIndex.open(snap, profile="reference", provider="none", overrides={
                "sources": {"sources": ["memory"],
                            "extra_paths": [{"path": "notes", "pattern": "**/*.md"}]}})
            idx.sync()
            self.open[day] = idx
        out = tools.memory_search(self.open[day], query, record=False, **args)
        # what OpenClaw's tool answered: no debug part, and no name of the answering backend
        # (our tools add it; the agent's transcripts were written by the reference engine)
        return {k: v for k, v in out.items() if k not in ("debug", "backend")}

    def close(self) -> None:
        for idx in self.open.values():
            idx.close()


def _stamp(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


class _Transcript:
    """One transcript being written: JSONL records with ids, parents and times in order."""

    META: ClassVar[dict[str, str]] = {"provider": "anthropic", "model": "claude-sonnet-4-5"}

    def __init__(self, sid: str, start: str) -> None:
        self.sid = sid
        self.t = dt.datetime.fromisoformat(start.replace("Z", "+00:00"))
        self.records: list[dict[str, Any]] = [{"type": "session", "version": 3, "id": sid,
                                               "timestamp": _stamp(self.t),
                                               "cwd": "/home/dev/pipeline"}]
        self.parent: str | None = None

    def add(self, role: str, body: Any, secs: int, **extra: Any) -> int:
        """Append a message ``secs`` after the last; returns its JSONL line number."""
        self.t += dt.timedelta(seconds=secs)
        mid = f"{self.sid[:6]}{len(self.records):02d}"
        self.records.append({"type": "message", "id": mid, "parentId": self.parent,
                             "timestamp": _stamp(self.t),
                             "message": {"role": role, "content": body, **extra}})
        self.parent = mid
        return len(self.records)

    def tool(self, call: str, name: str, args: dict[str, Any], output: str, *,
             say: str | None = None) -> None:
        """An assistant tool call and its result."""
        pre = [{"type": "text", "text": say}] if say else []
        self.add("assistant", [*pre, {"type": "toolCall", "id": call, "name": name,
                                      "arguments": args}], 8, **self.META, stopReason="toolUse")
        self.add("toolResult", [{"type": "text", "text": output}], 1, toolCallId=call,
                 toolName=name, isError=False)

    def text(self) -> str:
        return "".join(json.dumps(rec, ensure_ascii=False) + "\n" for rec in self.records)


def write_sessions(ws: Path, sessions: Path, tmp: Path) -> dict[str, int]:
    """The agent's transcripts; returns each session's evidence line (1-based JSONL line)."""
    then = _Then(ws, tmp)
    evidence: dict[str, int] = {}
    try:
        for sid, start, turns in content.SESSIONS:
            tr = _Transcript(sid, start)
            for k, turn in enumerate(turns):
                kind, call = turn[0], f"call_{sid[:4]}{k:02d}"
                if kind == "user":
                    tr.add("user", turn[1], 60 + 7 * k)
                elif kind == "assistant":
                    text = turn[1].removeprefix("@")
                    line = tr.add("assistant", [{"type": "text", "text": text}], 20 + 3 * k,
                                  **tr.META, stopReason="stop")
                    if turn[1].startswith("@"):
                        evidence[sid] = line
                elif kind == "search":
                    args = dict(turn[2]) if len(turn) > 2 else {}
                    result = then.search(start[:10], turn[1], args)
                    tr.tool(call, "memory_search", {"query": turn[1], **args},
                            json.dumps(result, ensure_ascii=False, indent=2),
                            say="Let me check memory first.")
                elif kind == "bash":
                    tr.tool(call, "bash", {"command": turn[1]}, turn[2])
            (sessions / f"{sid}.jsonl").write_text(tr.text(), encoding="utf-8")
    finally:
        then.close()
    return evidence


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def write_labels(out: Path, new: list[dict[str, Any]]) -> int:
    """The small demo's queries (their transcripts cited as the home cites them), then ``new``."""
    rows = []
    for line in (EXAMPLES / "demo-queries.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for r in rec["relevant"]:
            if r["path"].startswith("sessions/"):
                r["path"] = f"sessions/{AGENT}/{r['path'].removeprefix('sessions/')}"
        rows.append(rec)
    for i, rec in enumerate(new, 1):
        rows.append({"qid": f"home-q{i:02d}", **rec})
    _jsonl(out / QUERIES, rows)
    labels = out / LABELS
    labels.mkdir(exist_ok=True)
    _jsonl(labels / "queries.jsonl", [{k: r[k] for k in ("qid", "query", "category")}
                                      for r in rows])
    (labels / "qrels.txt").write_text("".join(
        f"{r['qid']} 0 {e['path']}#L{e['line']} 1\n" for r in rows for e in r["relevant"]),
        encoding="utf-8")
    _jsonl(out / NO_ANSWER, [{"qid": f"home-none-{i:02d}", "query": q, "kind": "demo-no-answer"}
                       for i, q in enumerate(content.NO_ANSWER, 1)])
    return len(rows)


def _clear(home: Path) -> None:
    """Remove what an earlier run wrote, except the workspace's indexes (``.memory/``): they
    are caches the next sync brings up to date, and a rebuild takes minutes."""
    if not home.exists():
        return
    for p in sorted(home.iterdir()):
        if p.name == "workspace":
            for q in p.iterdir():
                if q.name != ".memory":
                    shutil.rmtree(q) if q.is_dir() else q.unlink()
        else:
            shutil.rmtree(p) if p.is_dir() else p.unlink()


def generate(out: Path = EXAMPLES) -> int:
    """Write the home and its labels under ``out``; returns the number of labelled queries."""
    rng = random.Random(SEED)
    home = out / HOME
    _clear(home)
    ws, sessions = home / "workspace", home / "agents" / AGENT / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (home / "openclaw.json").write_text(OPENCLAW_JSON, encoding="utf-8")
    copy_small(ws, sessions)
    (ws / "memory-workbench.toml").write_text(WORKSPACE_TOML, encoding="utf-8")
    labels = write_diaries(ws, rng) + write_notes(ws)
    with tempfile.TemporaryDirectory(prefix="demo-home-") as tmp:
        evidence = write_sessions(ws, sessions, Path(tmp))
    for sid, query in content.SESSION_QUERIES:
        labels.append({"query": query, "category": "session", "relevant": [
            {"path": f"sessions/{AGENT}/{sid}.jsonl", "line": evidence[sid]}]})
    return write_labels(out, labels)


def main(argv: list[str] | None = None) -> int:
    out = Path(argv[0]) if argv else EXAMPLES  # a folder other than examples/: for the test
    n = generate(out)
    files = sum(1 for p in (out / HOME).rglob("*") if p.is_file() and ".memory" not in p.parts)
    print(f"wrote {out / HOME}: {files} files; {n} labelled queries in {out / QUERIES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
