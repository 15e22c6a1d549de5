"""The MCP Inspector CLI (npm ``@modelcontextprotocol/inspector``) as a client nobody here wrote.

It runs under node 24 from ``.tools/`` (``bash scripts/install-node-tools.sh``, which ``make
test`` and CI run). Skips, saying why, only when those tools are not installed (no npm).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_mcp import ENV, HttpServer

ROOT = Path(__file__).resolve().parents[1]
NODE = ROOT / ".tools" / "bin" / "node"
INSPECTOR = ROOT / ".tools" / "node_modules" / "@modelcontextprotocol" / "inspector" / "cli" / \
    "build" / "cli.js"
EXE = str(Path(sys.executable).with_name("memory-core"))

pytestmark = pytest.mark.skipif(
    not (NODE.exists() and INSPECTOR.exists()),
    reason=("MCP Inspector not installed in .tools/ (run `bash scripts/install-node-tools.sh`; "
            + ("npm is missing on this machine)" if shutil.which("npm") is None
               else "npm is present)")))


def inspector(*args: str) -> dict:
    env = {**os.environ, **ENV, "PATH": f"{NODE.parent}:{os.environ.get('PATH', '')}"}
    p = subprocess.run([str(NODE), str(INSPECTOR), "--cli", *args], capture_output=True,
                       text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    (w / "memory").mkdir(parents=True)
    (w / "MEMORY.md").write_text("# Memory\n\nThe team prefers tabs.\n")
    (w / "memory" / "2026-11-03.md").write_text(
        "# 2026-11-03\n\n## Incident\n\nThe scraper failed with SIERRA_9921 at 09:12.\n")
    return w


def test_inspector_over_stdio(ws: Path) -> None:
    server = [EXE, "mcp", "-w", str(ws), "--provider", "none"]
    tools = inspector(*server, "--method", "tools/list")
    assert {"memory_search", "memory_get", "memory_status"} <= {t["name"] for t in
                                                                tools["tools"]}
    res = inspector(*server, "--method", "tools/call", "--tool-name", "memory_search",
                    "--tool-arg", "query=SIERRA_9921")
    assert not res.get("isError")
    hit = res["structuredContent"]["results"][0]
    assert (hit["path"], hit["startLine"]) == ("memory/2026-11-03.md", 1)
    bad = inspector(*server, "--method", "tools/call", "--tool-name", "memory_get",
                    "--tool-arg", "path=/etc/passwd")
    assert bad["isError"] is True


def test_inspector_over_http(ws: Path) -> None:
    srv = HttpServer(ws)
    try:
        res = inspector(srv.url, "--transport", "http", "--method", "tools/call",
                        "--tool-name", "memory_search", "--tool-arg", "query=SIERRA_9921")
        assert res["structuredContent"]["results"][0]["path"] == "memory/2026-11-03.md"
    finally:
        assert "Traceback" not in srv.stop()
