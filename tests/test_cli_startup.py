"""``memory-core --version`` answers without importing the engine (issue #26 item 0).

Run as a fresh process, the way a user runs it: the version line is printed and neither numpy,
pydantic nor the engine's modules were imported. ``import memory_core`` alone is as light, and
its public names still resolve (on first use).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pydantic", "memory_core.config", "memory_core.index", "memory_core.store",
         "memory_core.cli.main")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60, check=True)


def test_version_imports_nothing_heavy() -> None:
    out = _run("import json, sys\nfrom memory_core.cli import main\ncode = main(['--version'])\n"
               f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))")
    first, last = out.stdout.splitlines()
    from memory_core.version import __version__

    assert first == f"memory-core {__version__}"
    assert json.loads(last) == [0, []]


def test_public_names_resolve_on_first_use() -> None:
    out = _run("import json, sys, memory_core\nbefore = 'numpy' in sys.modules\n"
               "ok = memory_core.MemoryIndex.__name__ == 'MemoryIndex' and "
               "callable(memory_core.fuse)\n"
               "print(json.dumps([before, ok, [n for n in memory_core.__all__ "
               "if getattr(memory_core, n, None) is None]]))")
    assert json.loads(out.stdout) == [False, True, []]
