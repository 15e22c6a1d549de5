"""A workbench that indexed a workspace in its own process keeps Streamlit's after-run garbage
collection cheap (issue #23): the model's libraries, imported by the build, are frozen out of
the collector's walk (:mod:`workbench.heap`) instead of being walked after every script run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apptesting import workbench_env

ROOT = Path(__file__).resolve().parent.parent

#: A fresh process, as a server is: the app opens on a demo copy whose index is a diary behind
#: (one written since the last sync), Chunks syncs it with the local model (the watcher is off,
#: so the page's own sync embeds the diary's new chunk: the model's libraries are imported in
#: this process, as by a whole build, without embedding the whole demo again), and the app runs
#: once more, as the sidebar's poll does two seconds later (AppTest runs a page switched to
#: without the app around it).
SCRIPT = """
import gc, json, sys
from streamlit.testing.v1 import AppTest
from tests.apptesting import APP
at = AppTest.from_file(str(APP), default_timeout=600).run()
at.switch_page("pages/chunks.py").run()
assert not at.exception, at.exception
again = AppTest.from_file(str(APP), default_timeout=600).run()
assert not again.exception, again.exception
gc.collect()
print(json.dumps({"torch": "torch" in sys.modules, "tracked": len(gc.get_objects()),
                  "frozen": gc.get_freeze_count()}))
"""


@pytest.mark.slow  # loads the local model in a child process and syncs: ~15 s
def test_in_process_build_leaves_the_collector_little_to_walk(tmp_path: Path,
                                                              indexed_demo_copy: Path) -> None:
    ws = indexed_demo_copy
    diary = ws / "memory" / "2026-11-28.md"
    diary.write_text(diary.read_text(encoding="utf-8")
                     + "\n## Late\n\nThe crawler's nightly run finished an hour early.\n",
                     encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(ROOT),
           **workbench_env(ws, tmp_path / "cache", "local")}
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=str(ROOT), text=True,
                         capture_output=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["torch"], "the build did not import the model's libraries: nothing measured"
    # before: ~550k tracked objects (3,000 modules) walked by every gc.collect(2); after, most
    # are frozen and what is left is the few runs' own objects
    assert facts["tracked"] * 4 < facts["frozen"], facts

