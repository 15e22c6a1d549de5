"""Regenerate ``recall-store-main.json``: the short-term recall store that OpenClaw 2026.5.20's
own ``recordShortTermRecalls`` writes for the fixture home's ``main`` agent.

The fixture (``tests/openclaw_fixture.py``) is built in a temporary folder, its memory_search
calls are mined with ``memory_core.openclaw`` (each with the results it got and the time of its
tool result), and each is fed to the installed reference's recorder under node, in order. Only
the output is committed. Needs the reference harness (``../shared/tools/openclaw-reference``):

    .venv/bin/python tests/goldens/openclaw/make_recall_golden.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/
OC = Path(os.environ.get("OC_ROOT", "/tmp/oc"))
MODULE = OC / "v2026.5.20/node_modules/openclaw/dist/short-term-promotion-KHC1CvFS.js"
SCRIPT = """
const mod = await import(process.argv[2]);
const fs = await import("node:fs");
const calls = JSON.parse(fs.readFileSync(process.argv[4], "utf8"));
for (const c of calls) {   // export "l" is recordShortTermRecalls in this bundle
  await mod.l({ workspaceDir: process.argv[3], query: c.query, results: c.results,
                nowMs: c.nowMs });
}
process.stdout.write(fs.readFileSync(process.argv[3] + "/memory/.dreams/short-term-recall.json",
                                     "utf8"));
"""


def main() -> None:
    from openclaw_fixture import build_home

    from memory_core.openclaw import mine_queries, open_home, transcripts_of_home

    with tempfile.TemporaryDirectory() as tmp:
        home = open_home(build_home(Path(tmp)), "main")
        qs = mine_queries(transcripts_of_home(home.sessions_dir, home.agent))
        calls = sorted(({"query": q.query, "nowMs": q.result_at or q.at,
                         "results": q.results_then} for q in qs if q.results_then is not None),
                       key=lambda c: c["nowMs"])
        (Path(tmp) / "calls.json").write_text(json.dumps(calls), encoding="utf-8")
        (Path(tmp) / "rec.mjs").write_text(SCRIPT, encoding="utf-8")
        ws = Path(tmp) / "ref-ws"
        (ws / "memory").mkdir(parents=True)
        out = subprocess.run(
            [str(OC / "bin/node"), str(Path(tmp) / "rec.mjs"), str(MODULE), str(ws),
             str(Path(tmp) / "calls.json")], check=True, capture_output=True, text=True,
            env={"HOME": tmp, "PATH": os.environ.get("PATH", "")}, timeout=120)
    store = json.loads(out.stdout)
    (HERE / "recall-store-main.json").write_text(
        json.dumps(store, indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(store['entries'])} entries")


if __name__ == "__main__":
    main()
