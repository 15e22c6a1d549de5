"""Regenerate ``contamination.json`` and ``rem-preview.json`` from the real engines.

* ``contamination.json``: each string of ``CASES`` through OpenClaw 2026.9.6's own
  ``isContaminatedDreamingSnippet`` (plain, and with ``allowTranscriptTurnSnippet``);
* ``rem-preview.json``: OpenClaw 2026.5.20's ``previewRemDreaming`` on the entries of
  ``REM_ENTRIES`` (limit 10, minPatternStrength 0.75): its body lines and chosen keys.

Only the outputs are committed. Needs the reference harness (``../shared/tools/openclaw-reference``):

    .venv/bin/python tests/goldens/openclaw/make_dreaming_goldens.py
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OC = Path(os.environ.get("OC_ROOT", "/tmp/oc"))
STORE_96 = OC / "v2026.9.6/node_modules/openclaw/dist/short-term-promotion-store-CMmsbVWh.mjs"
PHASES_520 = OC / "v2026.5.20/node_modules/openclaw/dist/dreaming-phases-Cyv7G2PG.js"

CASES = [
    "plain diary text about the crawler pool",
    "- Candidate: foo\n  - confidence: 0.62\n  - evidence: memory/2026-11-20.md:1-4\n"
    "  - recalls: 3\n  - status: staged",
    "- Candidate: foo confidence 0.6 evidence a:1-2 status: staged",
    "Candidate: x confidence: 0.5 evidence: notes/a.md:1-2 recalls: 2 status: staged",
    "### Reflections - Theme: `crawler` kept surfacing across 3 memories. - confidence: 1.00 "
    "- evidence: memory/2026-11-20.md:1-9 - note: reflection",
    "- Theme: `crawler` kept surfacing. - confidence: 1.00 - evidence: memory/a.md:1-2 "
    "- note: reflection",
    "x <!-- openclaw-memory-promotion:memory:memory/a.md:1:2 --> y",
    "- keep this [score=0.812 recalls=4 avg=0.700 source=memory/2026-11-20.md:1-2]",
    "- keep this [score=0.812 signals=5 recalls=4 avg=0.700 source=memory/2026-11-20.md:1-2]",
    "User: what did we decide about the pool?",
    "- assistant: the pool is 8",
    "The user: said hi",
    "Session Key: agent:main:abc and then Session ID: 1234",
    "Session ID: 1 ... Session Key: 2",
    "Conversation Summary: we discussed the crawler",
    "- Conversation Summary: short",
    "Save important context from this session to the daily memory file. STRICT RULES: none",
    "[dreaming-narrative-42] User: Write a dream diary entry from these memory fragments:",
    "@@ -1,2 + Candidate: foo confidence: 0.5 evidence: memory/a.md status: staged recalls: 1",
    "( Candidate: x ) confidence: 0.9 evidence: memory/.dreams/session-corpus/2026-11-20.txt "
    "status: staged recalls: 2",
    "```bash\nmake crawl\n```",
    "[cron:nightly-export] delivered 3 files",
    '{"results": [{"path": "memory/a.md"}]}',
    "Reflection: the crawler keeps failing. confidence: 0.7 evidence: memory/a.md note: reflection",
    "中文日记：连接池改成了 8 个连接。",
]

REM_ENTRIES = [
    {"key": "memory:memory/2026-11-20.md:1:9", "path": "memory/2026-11-20.md", "startLine": 1,
     "endLine": 9, "source": "memory", "snippet": "Switched the crawler to a connection pool of 8.",
     "recallCount": 4, "dailyCount": 1, "groundedCount": 0, "totalScore": 3.4, "maxScore": 0.9,
     "firstRecalledAt": "2026-11-20T10:00:00.000Z", "lastRecalledAt": "2026-11-23T10:00:00.000Z",
     "queryHashes": ["a", "b", "c"], "recallDays": ["2026-11-20", "2026-11-21", "2026-11-23"],
     "conceptTags": ["crawler", "connection", "pool"]},
    {"key": "memory:memory/2026-11-21.md:3:3", "path": "memory/2026-11-21.md", "startLine": 3,
     "endLine": 3, "source": "memory", "snippet": "The crawler pool size is 8 connections.",
     "recallCount": 2, "dailyCount": 0, "groundedCount": 0, "totalScore": 1.5, "maxScore": 0.8,
     "firstRecalledAt": "2026-11-21T10:00:00.000Z", "lastRecalledAt": "2026-11-22T10:00:00.000Z",
     "queryHashes": ["a", "d"], "recallDays": ["2026-11-21", "2026-11-22"],
     "conceptTags": ["crawler", "pool", "size", "connections"]},
    {"key": "memory:memory/2026-11-21.md:5:5", "path": "memory/2026-11-21.md", "startLine": 5,
     "endLine": 5, "source": "memory", "snippet": "The crawler pool size is 8 connections now.",
     "recallCount": 1, "dailyCount": 0, "groundedCount": 0, "totalScore": 0.7, "maxScore": 0.7,
     "firstRecalledAt": "2026-11-22T10:00:00.000Z", "lastRecalledAt": "2026-11-22T10:00:00.000Z",
     "queryHashes": ["e"], "recallDays": ["2026-11-22"], "conceptTags": ["crawler", "pool"]},
    {"key": "memory:memory/2026-11-22.md:2:2", "path": "memory/2026-11-22.md", "startLine": 2,
     "endLine": 2, "source": "memory", "snippet": "Hosting costs went up: bigger database.",
     "recallCount": 1, "dailyCount": 0, "groundedCount": 0, "totalScore": 0.3, "maxScore": 0.3,
     "firstRecalledAt": "2026-11-22T10:00:00.000Z", "lastRecalledAt": "2026-11-22T10:00:00.000Z",
     "queryHashes": ["f"], "recallDays": ["2026-11-22"], "conceptTags": ["hosting", "database"],
     "promotedAt": "2026-11-23T00:00:00.000Z"},
]

SCRIPT = """
const fs = await import("node:fs");
const store = await import(process.argv[2]);
const phases = await import(process.argv[3]);
const input = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
const contamination = input.cases.map((s) => ({ text: s,
  contaminated: store.y(s), allowingTranscriptTurns: store.y(s, { allowTranscriptTurnSnippet: true }) }));
const rem = phases.n({ entries: input.rem, limit: 10, minPatternStrength: 0.75 });
process.stdout.write(JSON.stringify({ contamination,
  rem: { bodyLines: rem.bodyLines, candidateKeys: rem.candidateKeys } }));
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "in.json").write_text(json.dumps({"cases": CASES, "rem": REM_ENTRIES}))
        (Path(tmp) / "g.mjs").write_text(SCRIPT)
        out = subprocess.run([str(OC / "bin/node"), str(Path(tmp) / "g.mjs"), str(STORE_96),
                              str(PHASES_520), str(Path(tmp) / "in.json")], check=True,
                             capture_output=True, text=True, timeout=120,
                             env={"HOME": tmp, "PATH": os.environ.get("PATH", "")})
    data = json.loads(out.stdout)
    (HERE / "contamination.json").write_text(
        json.dumps(data["contamination"], indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (HERE / "rem-preview.json").write_text(
        json.dumps({"entries": REM_ENTRIES, **data["rem"]}, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8")
    print(sum(c["contaminated"] for c in data["contamination"]), "of", len(CASES), "contaminated")


if __name__ == "__main__":
    main()
