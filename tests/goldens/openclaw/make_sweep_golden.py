"""Regenerate ``sweep-main.json``: what OpenClaw 2026.5.20's own dreaming sweep (Light, then
REM: ``runDreamingSweepPhases``, dreaming enabled, timezone UTC, default phases) writes for the
fixture home's ``main`` workspace after its real memory_search results were recorded by the
engine's ``recordShortTermRecalls``: the two staging reports and the phase hits.

Only the output is committed. Needs the reference harness:

    .venv/bin/python tests/goldens/openclaw/make_sweep_golden.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/
OC = Path(os.environ.get("OC_ROOT", "/tmp/oc"))
DIST = OC / "v2026.5.20/node_modules/openclaw/dist"
NOW_MS = 1_795_431_600_000  # 2026-11-23T11:00:00Z
SCRIPT = r"""
const fs = await import("node:fs");
const rec = await import(process.argv[2]);     // export "l": recordShortTermRecalls
const phases = await import(process.argv[3]);  // export "r": runDreamingSweepPhases
const [ws, callsFile, nowMs] = [process.argv[4], process.argv[5], Number(process.argv[6])];
for (const c of JSON.parse(fs.readFileSync(callsFile, "utf8")))
  await rec.l({ workspaceDir: ws, query: c.query, results: c.results, nowMs: c.nowMs });
const logger = { info() {}, warn() {}, error() {}, debug() {} };
await phases.r({ workspaceDir: ws, pluginConfig: { dreaming: { enabled: true, timezone: "UTC" } },
                 cfg: {}, logger, nowMs });
const files = {};
for (const p of ["memory/dreaming/light", "memory/dreaming/rem"])
  for (const f of fs.existsSync(ws + "/" + p) ? fs.readdirSync(ws + "/" + p) : [])
    files[p + "/" + f] = fs.readFileSync(ws + "/" + p + "/" + f, "utf8");
const phase = JSON.parse(fs.readFileSync(ws + "/memory/.dreams/phase-signals.json", "utf8"));
process.stdout.write(JSON.stringify({ files, phase: Object.fromEntries(
  Object.entries(phase.entries).map(([k, v]) => [k, [v.lightHits, v.remHits]])) }));
"""


def main() -> None:
    from openclaw_fixture import build_home

    from memory_core.openclaw import mine_queries, open_home, transcripts_of_home

    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        home = open_home(build_home(t), "main")
        qs = mine_queries(transcripts_of_home(home.sessions_dir, home.agent))
        calls = sorted(({"query": q.query, "nowMs": q.result_at or q.at,
                         "results": q.results_then} for q in qs if q.results_then is not None),
                       key=lambda c: c["nowMs"])
        (t / "calls.json").write_text(json.dumps(calls))
        (t / "s.mjs").write_text(SCRIPT)
        ws = t / "ref-ws"
        shutil.copytree(home.workspace, ws)
        out = subprocess.run(
            [str(OC / "bin/node"), str(t / "s.mjs"), str(DIST / "short-term-promotion-KHC1CvFS.js"),
             str(DIST / "dreaming-phases-Cyv7G2PG.js"), str(ws), str(t / "calls.json"),
             str(NOW_MS)], check=True, capture_output=True, text=True, timeout=120,
            env={"HOME": tmp, "PATH": os.environ.get("PATH", ""), "TZ": "UTC"})
    data = {"nowMs": NOW_MS, **json.loads(out.stdout)}
    (HERE / "sweep-main.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    print(sorted(data["files"]), data["phase"])


if __name__ == "__main__":
    main()
