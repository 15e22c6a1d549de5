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
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pydantic", "memory_core.base.config", "memory_core.index",
         "memory_core.storage.store",
         "memory_core.cli.main")


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=60, check=True)


def test_version_imports_nothing_heavy() -> None:
    out = _run("import json, sys\nfrom memory_core.cli import main\ncode = main(['--version'])\n"
               f"print(json.dumps([code, [m for m in {HEAVY!r} if m in sys.modules]]))")
    first, last = out.stdout.splitlines()
    from memory_core.base.version import __version__

    assert first == f"memory-core {__version__}"
    assert json.loads(last) == [0, []]


def test_public_names_resolve_on_first_use() -> None:
    out = _run("import json, sys, memory_core\nbefore = 'numpy' in sys.modules\n"
               "ok = memory_core.MemoryIndex.__name__ == 'MemoryIndex' and "
               "callable(memory_core.fuse)\n"
               "print(json.dumps([before, ok, [n for n in memory_core.__all__ "
               "if getattr(memory_core, n, None) is None]]))")
    assert json.loads(out.stdout) == [False, True, []]


#: What a no-op ``index`` must not load: the numeric stack, the model's, pydantic (no config
#: file is read), the HTTP client stack (no remote provider) and qmd's side of the backends.
NOOP_UNNEEDED = ("numpy", "pydantic", "torch", "sentence_transformers", "tokenizers",
                 "sqlite_vec", "http.client", "memory_core.backends.qmd",
                 "memory_core.embeddings.remote",
                 # what a search uses (issue #26: ~10 ms of a no-op's imports)
                 "memory_core.read.fusion", "memory_core.read.search", "memory_core.read.expansion",
                 "memory_core.read.query",
                 # what only `status` (or `index --json`) and a search use: the status groups,
                 # the backends' face, the candidates' class (issue #26: ~10 ms of imports)
                 "memory_core.status", "memory_core.backends.protocol",
                 "memory_core.read.candidates",
                 # the other command groups, and what only a retried request uses
                 "memory_core.cli.evaluate", "memory_core.cli.promote", "memory_core.cli.mcp",
                 "memory_core.cli.watch", "memory_core.cli.queries", "random")


def test_noop_index_imports_only_what_it_uses(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A no-op ``memory-core index`` with the local model, over an index that has both
    sidecars, runs without numpy, pydantic, torch or the model: the sync only compares the
    files with the index and the sidecars' headers with its stamp. A search in the next
    process does load numpy (on first use) and answers from the vectors."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- The staging database is Postgres 16.\n")
    (ws / "memory" / "2026-03-02.md").write_text(
        "# 2026-03-02\n\n- Moved the nightly backup to 02:00 UTC after the disk filled up.\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMORY_CORE_POSTINGS_MIN_ROWS": "1"}

    def cli(args: list[str], probe: bool) -> list[str]:
        code = (f"import json, sys\nfrom memory_core.cli import main\ncode = main({args!r})\n"
                f"print(json.dumps([code, [m for m in {NOOP_UNNEEDED!r} if m in sys.modules]]))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=600, check=True)
        lines = out.stdout.splitlines()
        got = json.loads(lines[-1])
        assert got[0] == 0, out.stderr
        return [*lines[:-1], json.dumps(got[1])] if probe else lines

    # the first build, by the same command in this process (whose model is likely loaded: a
    # child would import torch and load it again, ~9 CPU s); the no-op and the search that
    # are measured run in fresh processes
    from memory_core.cli import main

    monkeypatch.setenv("MEMORY_CORE_POSTINGS_MIN_ROWS", "1")
    assert main(["index", "--workspace", str(ws), "--no-progress"]) == 0
    store = next((ws / ".memory").glob("*.sqlite"))
    assert store.with_name(store.name + ".vectors").is_file()
    assert store.with_name(store.name + ".postings").is_file()
    *report, loaded = cli(["index", "--workspace", str(ws), "--no-progress"], probe=True)
    assert any("0 indexed, 2 unchanged" in line for line in report), report
    assert json.loads(loaded) == []
    *hits, loaded = cli(["search", "when does the backup run", "--workspace", str(ws),
                         "--json", "--no-record"], probe=True)
    assert "2026-03-02.md" in "\n".join(hits)
    assert "numpy" in json.loads(loaded)


def test_noop_index_reads_a_config_file_without_pydantic(tmp_path: Path) -> None:
    """With a valid ``memory-workbench.toml`` the no-op ``index`` still imports no pydantic
    (the file is checked by :mod:`memory_core.base.config_check`); the file's values are in force
    (keyword-only, as it says), and a broken value gets its one-line message."""
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-03-02.md").write_text("# 2026-03-02\n\n- The backup runs at 02:00.\n")
    config = ws / "memory-workbench.toml"
    config.write_text('[sources]\nsources = ["memory"]\n\n[provider]\nprovider = "none"\n'
                      'fallback = []\ntimeout_s = 5\n\n[chunking]\ntokens = 300\n'
                      'overlap = 40\n\n[search]\nmax_results = 4\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    code = ("import json, sys\nfrom memory_core.cli import main\n"
            f"code = main(['index', '--workspace', {str(ws)!r}, '--no-progress'])\n"
            f"print(json.dumps([code, [m for m in {NOOP_UNNEEDED!r} if m in sys.modules]]))")

    def run() -> tuple[list[str], list[Any]]:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=600, check=True)
        *lines, last = out.stdout.splitlines()
        return lines, json.loads(last)

    run()  # the first build
    report, (code_, loaded) = run()
    assert code_ == 0 and any("0 indexed, 1 unchanged" in line for line in report), report
    assert loaded == []
    store = next((ws / ".memory").glob("*.sqlite"))
    assert "none" in store.name  # the file's provider named the index
    config.write_text('[chunking]\ntokens = "300"\n', encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "memory_core", "index", "--workspace", str(ws),
                          "--no-progress"], capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 2
    assert bad.stderr.strip() == (f"memory-core: error: {config}: chunking.tokens: expects an "
                                  'integer (got "300")')
