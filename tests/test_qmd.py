"""The qmd backend against the real qmd 2.8.3 (installed by scripts/install-node-tools.sh).

Acceptance of issue #11: ``memory-core search --backend qmd`` agrees with qmd run by hand on the
same two collections (same top file; at least 3 of the same top 4), with workspace paths and
true line ranges; ``status --backend qmd`` names the backend, its version and its collections;
a missing ``[qmd] command`` gives builtin results that say they fell back. Skipped, with the
reason, only where node/npm/qmd are absent (CI installs them).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core.backends import (
    FallbackBackend,
    OpenedFallback,
    QmdError,
    clear_open_failures,
    open_backend,
    resolve_command,
)
from memory_core.backends.qmd_process import child_path
from memory_core.base.locations import REPO_ROOT
from memory_core.read.reading import PathRefused

QMD = resolve_command("qmd")
pytestmark = pytest.mark.skipif(
    QMD is None, reason="qmd not installed (run `bash scripts/install-node-tools.sh`; needs npm)")
DEMO = REPO_ROOT / "examples" / "demo-workspace"
KEYWORD_QUERIES = ["database migration", "PgBouncer replica", "WireGuard", "crawler proxy",
                   "report schedule", "Brightline"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_core.cli", *args], capture_output=True,
                          text=True, timeout=180, cwd=cwd,
                          env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))


def make_workspace(root: Path, config: str = "") -> Path:
    """The demo workspace's memory (MEMORY.md + memory/), keyword-only builtin, no extras."""
    ws = root / "ws"
    ws.mkdir()
    shutil.copy(DEMO / "MEMORY.md", ws / "MEMORY.md")
    shutil.copytree(DEMO / "memory", ws / "memory")
    (ws / "memory-workbench.toml").write_text(
        '[sources]\nsources = ["memory"]\n[provider]\nprovider = "none"\n' + config,
        encoding="utf-8")
    return ws


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    clear_open_failures()
    return make_workspace(tmp_path)


def by_hand(ws: Path, home: Path, *args: str) -> str:
    """qmd run by hand: its own XDG folders, the two collections added as a user would."""
    env = dict(os.environ, XDG_CACHE_HOME=str(home / "cache"),
               XDG_CONFIG_HOME=str(home / "config"), PATH=child_path(os.environ.get("PATH")))
    env.pop("QMD_CONFIG_DIR", None)
    assert QMD is not None
    if not (home / "cache").exists():
        for coll, path, mask in (("memory-root-main", ws, "MEMORY.md"),
                                 ("memory-dir-main", ws / "memory", "**/*.md")):
            subprocess.run([QMD, "collection", "add", str(path), "--name", coll, "--mask", mask],
                           env=env, cwd=ws, check=True, capture_output=True, timeout=60)
    return subprocess.run([QMD, *args], env=env, cwd=ws, check=True, capture_output=True,
                          text=True, timeout=60).stdout


def hand_files(entries: list[dict[str, object]]) -> list[str]:
    out = []
    for e in entries:
        uri = str(e["file"])
        coll, rel = uri.removeprefix("qmd://").split("/", 1)
        out.append(rel if coll == "memory-root-main" else f"memory/{rel}")
    return out


def test_search_matches_qmd_by_hand(ws: Path, tmp_path: Path) -> None:
    """Same top file for keyword queries, ≥3 of the same top 4, workspace paths, true lines."""
    for q in KEYWORD_QUERIES:
        r = cli("search", q, "-w", str(ws), "--backend", "qmd", "--json", "--no-record")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["backend"] == "qmd" and "fallback" not in out, out
        ours = [h["path"] for h in out["results"]]
        hand = hand_files(json.loads(by_hand(ws, tmp_path / "hand", "search", q, "--json",
                                             "-n", "4", "-c", "memory-root-main",
                                             "-c", "memory-dir-main")))
        assert ours and hand, q
        assert ours[0] == hand[0], (q, ours, hand)
        assert len(set(ours[:4]) & set(hand[:4])) >= min(3, len(hand)), (q, ours, hand)
        for h in out["results"]:
            assert not h["path"].startswith(("/", "qmd")), h["path"]
            lines = (ws / h["path"]).read_text(encoding="utf-8").split("\n")
            body = h["snippet"].split("\n", 1)[1].rstrip("\n").split("\n")
            cited = lines[h["startLine"] - 1 : h["endLine"]]
            # the snippet is the cited lines (qmd may cut its last one, marking it "...")
            assert body[:-1] == cited[: len(body) - 1], h
            assert cited[len(body) - 1].startswith(body[-1].removesuffix("...")), h
            assert h["citation"].startswith(f"{h['path']}#L{h['startLine']}")


def test_status_names_backend_version_collections(ws: Path) -> None:
    assert cli("index", "-w", str(ws), "--backend", "qmd", "--no-progress").returncode == 0
    r = cli("status", "-w", str(ws), "--backend", "qmd", "--json")
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["backend"] == "qmd" and st["requestedBackend"] == "qmd"
    q = st["custom"]["qmd"]
    assert q["version"] == "2.8.3"
    names = {c["name"]: c for c in q["collections"]}
    assert set(names) == {"memory-root-main", "memory-dir-main"}
    assert names["memory-root-main"]["files"] == 1
    assert names["memory-dir-main"]["files"] == len(list((ws / "memory").rglob("*.md")))
    assert st["files"] == 1 + names["memory-dir-main"]["files"]
    # qmd's index is in the workspace's per-agent folder, never the user's ~/.cache
    assert Path(st["dbPath"]).is_relative_to(ws / ".memory" / "qmd" / "main")
    assert Path(st["dbPath"]).is_file()


def test_missing_command_falls_back_to_builtin(ws: Path, tmp_path: Path) -> None:
    (ws / "memory-workbench.toml").write_text(
        (ws / "memory-workbench.toml").read_text() +
        f'[qmd]\ncommand = "{tmp_path / "no-such-qmd"}"\n', encoding="utf-8")
    r = cli("search", "database migration", "-w", str(ws), "--backend", "qmd", "--json",
            "--no-record")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["backend"] == "builtin" and out["requestedBackend"] == "qmd"
    assert out["results"], out
    assert "qmd binary unavailable" in out["fallback"]["reason"]
    assert out["fallback"]["from"] == "qmd"
    r = cli("search", "database migration", "-w", str(ws), "--backend", "qmd", "--no-record")
    assert "fell back to builtin" in r.stderr and r.stdout.strip()
    st = json.loads(cli("status", "-w", str(ws), "--backend", "qmd", "--json").stdout)
    assert st["backend"] == "builtin" and st["fallback"]["from"] == "qmd"
    assert st["custom"]["fallback"]["disabled"] is True


def test_open_failure_cooldown(ws: Path, tmp_path: Path) -> None:
    """A failed open is not retried for 60 s (same settings); other settings try again."""
    missing = str(tmp_path / "gone")
    b1 = open_backend(ws, "qmd", overrides={"qmd": {"command": missing}})
    assert isinstance(b1, OpenedFallback)
    # Now the command exists (a copy of qmd's launcher): within the cooldown it is not tried.
    b2 = open_backend(ws, "qmd", overrides={"qmd": {"command": missing}})
    assert isinstance(b2, OpenedFallback) and b2.note.reason == b1.note.reason
    b3 = open_backend(ws, "qmd")  # another identity: tried, and qmd is there
    assert isinstance(b3, FallbackBackend)
    clear_open_failures()
    for b in (b1, b2, b3):
        b.close()


def test_failures_during_search_fall_back_with_reason(ws: Path) -> None:
    """Timeout, non-zero exit, models missing: builtin answers, the reason is in the result
    and in status, and later searches stay on builtin (the reference's primaryFailed)."""
    b = open_backend(ws, "qmd", overrides={"qmd": {"timeout_ms": 1}})
    assert isinstance(b, FallbackBackend)
    res = b.search("database migration")
    assert res.backend == "builtin" and res.hits
    assert res.fallback is not None and "timed out after 1ms" in res.fallback.reason
    st = b.status()
    assert st.backend == "builtin" and st.fallback is not None
    assert b.search("PgBouncer").backend == "builtin"
    b.close()

    b = open_backend(ws, "qmd", overrides={"qmd": {"search_mode": "vsearch"}})
    assert isinstance(b, FallbackBackend)
    assert b.status().vector is not None and "models missing" in str(b.status().to_json())
    res = b.search("database migration")
    assert res.backend == "builtin" and res.fallback is not None
    assert res.fallback.reason.startswith("models missing: qmd vsearch needs")
    b.close()

    b = open_backend(ws, "qmd")
    assert isinstance(b, FallbackBackend)
    assert b.search("database migration").backend == "qmd"
    b.primary.index_path.write_bytes(b"this is not a sqlite database" * 100)
    b.primary.close()
    res = b.search("PgBouncer")
    assert res.backend == "builtin" and res.fallback is not None
    assert "failed (code" in res.fallback.reason or "qmd index" in res.fallback.reason
    b.close()


def test_paths_outside_workspace_spaces_and_cjk(ws: Path, tmp_path: Path) -> None:
    """Collection files map back to workspace paths (``qmd/<collection>/…`` outside it)."""
    outside = tmp_path / "shared notes"
    outside.mkdir()
    (outside / "Quokka Plan.md").write_text("# Plan\n\nfirst\nthe quokka zebrafish plan\n",
                                            encoding="utf-8")
    (ws / "memory" / "中文 笔记.md").write_text("# 笔记\n\n周五 不要 上线 数据库迁移\n",
                                              encoding="utf-8")
    b = open_backend(ws, "qmd", overrides={"qmd": {"paths": [{"path": str(outside)}]}})
    assert isinstance(b, FallbackBackend)
    hits = b.search("quokka zebrafish").hits
    assert [h.path for h in hits] == ["qmd/custom-1-main/Quokka Plan.md"]
    assert hits[0].start_line <= 4 <= hits[0].end_line  # the line that matched is cited
    got = b.get(hits[0].path, 4, 1)
    assert got.text == "the quokka zebrafish plan"
    hits = b.search("数据库迁移").hits
    assert hits and hits[0].path == "memory/中文 笔记.md" and hits[0].start_line <= 3
    with pytest.raises(PathRefused):
        b.get("qmd/custom-1-main/../../etc/passwd")
    with pytest.raises(PathRefused):
        b.get("memory-workbench.toml")
    assert b.get("memory/2026-11-14.md", 14, 1).text.strip().startswith("will look empty")
    b.close()


def test_collection_removed_behind_our_back_is_repaired(ws: Path) -> None:
    b = open_backend(ws, "qmd")
    assert isinstance(b, FallbackBackend)
    assert b.search("WireGuard").backend == "qmd"
    b.primary.run(["collection", "remove", "memory-dir-main"], 30_000)
    res = b.search("database migration")
    assert res.backend == "qmd" and res.hits and res.hits[0].path.startswith("memory/")
    b.close()


def test_qmd_stays_offline_and_in_its_folders(ws: Path) -> None:
    b = open_backend(ws, "qmd")
    assert isinstance(b, FallbackBackend)
    env = b.primary.env
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1") and env["NODE_USE_ENV_PROXY"] == "1"
    assert env["XDG_CACHE_HOME"].startswith(str(ws / ".memory" / "qmd"))
    assert env["XDG_CONFIG_HOME"].startswith(str(ws / ".memory" / "qmd"))
    b.search("Brightline")
    assert (ws / ".memory" / "qmd" / "main" / "xdg-config" / "qmd" / "index.yml").is_file()
    # qmd's node (24, from .tools) honours the proxy: a request dies at the closed local port
    node = shutil.which("node", path=env["PATH"])
    assert node is not None
    script = ("fetch('https://huggingface.co/x').then(() => console.log('REACHED'), "
              "e => console.log(e.cause && e.cause.code))")
    r = subprocess.run([node, "-e", script], env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "ECONNREFUSED", (r.stdout, r.stderr)
    b.close()


def test_get_through_cli(ws: Path) -> None:
    r = cli("get", "MEMORY.md", "-w", str(ws), "--backend", "qmd", "--from", "1", "--lines", "1",
            "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["text"].startswith("# MEMORY.md")
    r = cli("get", "../x.md", "-w", str(ws), "--backend", "qmd")
    assert r.returncode == 2 and r.stderr.count("\n") == 1


def test_qmd_error_is_a_runtime_error() -> None:
    assert issubclass(QmdError, RuntimeError)


def test_backend_kind_in_config(tmp_path: Path) -> None:
    """``[backend] kind = "qmd"`` makes qmd the default; ``--backend builtin`` overrides it."""
    clear_open_failures()
    ws = make_workspace(tmp_path, '[backend]\nkind = "qmd"\n')
    out = json.loads(cli("search", "WireGuard", "-w", str(ws), "--json", "--no-record").stdout)
    assert out["backend"] == "qmd" and out["results"]
    out = json.loads(cli("search", "WireGuard", "-w", str(ws), "--json", "--no-record",
                         "--backend", "builtin").stdout)
    assert out["backend"] == "builtin" and out["results"]  # the one answer shape
    r = cli("search", "x", "-w", str(ws), "--backend", "elastic")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def _processes_with(marker: str) -> list[int]:
    """Pids whose environment mentions ``marker`` (Linux /proc)."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if marker.encode() in (d / "environ").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
def test_timeout_ends_qmd_and_its_launcher(tmp_path: Path) -> None:
    """qmd's launcher runs qmd in a child: a timeout must end both, leaving nothing behind."""
    from memory_core.backends.qmd_process import qmd_env, run_qmd

    marker = tmp_path / "xdg-unique-marker"
    env = qmd_env(marker / "config", marker / "cache")
    with pytest.raises(QmdError, match="timed out after 1500ms"):
        run_qmd("qmd", ["pull"], env=env, cwd=tmp_path, timeout_ms=1500)  # waits on the proxy
    assert _processes_with(str(marker)) == []
