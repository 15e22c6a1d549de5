"""``eval --executor ray``: one Ray task per workspace gives the serial run's metrics, exactly.

Three tiny workspaces in ``tmp_path`` (each with its own labelled queries and its own index),
embedded through a real OpenAI-compatible server on 127.0.0.1 that answers with deterministic
hashed bag-of-words vectors (so both legs count, and no model is loaded in the workers). Ray
runs in local mode with two workers, as ``memory-core eval --executor ray`` starts it. The tests
that need Ray skip where the ``ray`` extra is not installed; the install hint is tested anyway.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_core.base.config import profile_settings
from memory_core.cli import main
from memory_core.evaluation import EvalQuery, EvalReport, Evidence, QuerySet, run_eval

DIM = 64


def _embed(text: str) -> list[float]:
    """A deterministic, normalised bag of hashed words: similar words → similar vectors."""
    v = np.zeros(DIM, dtype=np.float32)
    for w in re.findall(r"\w+", text.lower()):
        v[int(hashlib.md5(w.encode()).hexdigest()[:8], 16) % DIM] += 1.0
    n = float(np.linalg.norm(v))
    return (v / n if n else v).tolist()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        data = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        inputs = data.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        body = json.dumps({"object": "list", "model": data.get("model"),
                           "data": [{"object": "embedding", "index": i, "embedding": _embed(t)}
                                    for i, t in enumerate(inputs)],
                           "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` on 127.0.0.1 (an ephemeral port) for the block; yields its ``/v1`` URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture()
def embed_url() -> Iterator[str]:
    with serve(_Handler) as url:
        yield url


DIARIES = {
    "alpha": {"2026-01-05.md": "# Monday\n\nThe connection pool was exhausted at noon.\n\n"
                               "Raised the pool size to 40.\n",
              "2026-01-06.md": "# Tuesday\n\nBackups now go to S3 Glacier every night.\n",
              "2026-01-07.md": "# Wednesday\n\nLunch with Dana about the hiring plan.\n",
              "2026-01-08.md": "# Thursday\n\nThe swimming pool at the gym is closed.\n\n"
                               "Dana's backups of the photos are on a USB disk.\n"},
    "beta": {"2026-02-01.md": "# Sunday\n\nThe router runs WireGuard on VLAN 20.\n",
             "2026-02-02.md": "# Monday\n\nFirmware 7.2 bricked the access point.\n\n"
                              "Rolled back to 7.1.\n",
             "2026-02-03.md": "# Tuesday\n\nOrdered a spare switch for the rack.\n",
             "2026-02-04.md": "# Wednesday\n\nThe light switch in the hall needs a new "
                              "firmware-free dimmer.\n"},
    "gamma": {"2026-03-10.md": "# Tuesday\n\nMaya is allergic to peanuts.\n",
              "2026-03-11.md": "# Wednesday\n\nThe deadline slipped by two weeks.\n",
              "2026-03-12.md": "# Thursday\n\nJazz night in New Orleans was great.\n",
              "2026-03-13.md": "# Friday\n\nThe peanut butter deadline for the bake sale "
                               "is Monday.\n"},
}
QUERIES = {
    "alpha": [("pool exhausted", "2026-01-05.md", 3), ("where do backups go", "2026-01-06.md", 3),
              ("hiring plan lunch", "2026-01-07.md", 3),
              ("how many database connections are allowed", "2026-01-05.md", 5)],
    "beta": [("wireguard vlan", "2026-02-01.md", 3), ("firmware rollback", "2026-02-02.md", 5),
             ("spare switch", "2026-02-03.md", 3),
             ("which version of the firmware works", "2026-02-02.md", 5)],
    "gamma": [("peanut allergy", "2026-03-10.md", 3), ("deadline slipped", "2026-03-11.md", 3),
              ("music in new orleans", "2026-03-12.md", 3),
              ("what food must Maya avoid", "2026-03-10.md", 3)],
}


def _query_set(root: Path, embed_url: str) -> QuerySet:
    """Three workspaces, four labelled queries each; every workspace indexes with the server."""
    workspaces: dict[str, Path | None] = {}
    queries = []
    for key, files in DIARIES.items():
        ws = root / key
        (ws / "memory").mkdir(parents=True)
        for name, text in files.items():
            (ws / "memory" / name).write_text(text, encoding="utf-8")
        (ws / "memory-workbench.toml").write_text(
            f'[provider]\nprovider = "openai"\nbase_url = "{embed_url}"\nmodel = "hash-64"\n'
            'fallback = []\n', encoding="utf-8")
        workspaces[key] = ws
        for i, (text, path, line) in enumerate(QUERIES[key], 1):
            queries.append(EvalQuery(f"{key}-{i}", text, "single-hop",
                                     (Evidence(f"memory/{path}", line),), key))
    return QuerySet("three tiny workspaces", queries, workspaces, dict.fromkeys(workspaces))


def _untimed(value: Any) -> Any:
    """``value`` without its ``latency_ms`` entries, at any depth (timings always differ)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "latency_ms"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _without_latency(report: EvalReport) -> list[dict[str, Any]]:
    """Every run's metrics and per-query rows, minus the timings (the only thing that differs)."""
    return [_untimed({"label": run.label, "leg": run.leg, "metrics": run.metrics,
                      "rows": run.per_query}) for run in report.runs]


def test_ray_gives_the_serial_metrics(tmp_path: Path, embed_url: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    from memory_core.evaluation.ray_executor import run_eval_ray

    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    qs = _query_set(tmp_path / "ws", embed_url)
    settings = {"default": profile_settings("default")}
    seen: list[tuple[str, int, int]] = []
    # Ray first: the workers build the three indexes; the serial run then reads the same ones.
    par = run_eval_ray(None, qs, settings, lambda s, d, t: seen.append((s, d, t)), legs=True)
    ser = run_eval(None, qs, settings, legs=True)
    assert seen[-1] == ("workspaces", 3, 3)
    assert par.info["executor"] == "ray"
    assert par.info["indexes"] == ser.info["indexes"]
    assert set(par.info["indexes"]) == {"alpha", "beta", "gamma"}
    assert all(ix["provider"] == "openai" and ix["files"] == 4
               for ix in par.info["indexes"].values())
    assert _without_latency(par) == _without_latency(ser)  # exactly equal floats
    assert par.audit == ser.audit
    assert [r["qid"] for r in par.per_query] == [q.qid for q in qs.queries]
    assert par.metrics["n_queries"] == 12
    # Both legs took part: the vector leg alone found something, as did the keyword leg.
    assert par.run("vector leg").metrics["chunk"]["success@5"] > 0
    assert par.metrics["chunk"]["success@5"] > 0.5


# full tier: the fast tier checks the same equality through the API (the test above, a Ray
# cluster of its own) and the CLI's --executor ray up to Ray's import (the test below); this one
# starts a second cluster for the CLI's report (~15 s)
@pytest.mark.full
def test_cli_ray_matches_serial_on_a_query_file(tmp_path: Path, embed_url: str,
                                                capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray")
    monkeypatch.setenv("MEMORY_WORKBENCH_CACHE", str(tmp_path / "cache"))
    qs = _query_set(tmp_path / "ws", embed_url)
    qf = tmp_path / "alpha.jsonl"
    qf.write_text("".join(json.dumps({"qid": q.qid, "query": q.query, "category": q.category,
                                      "relevant": [{"path": e.path, "line": e.line}
                                                   for e in q.relevant]}) + "\n"
                          for q in qs.queries if q.workspace == "alpha"))
    outs = {}
    for executor in ("ray", "serial"):
        out = tmp_path / f"{executor}.json"
        code = main(["eval", "--queries", str(qf), "--workspace", str(tmp_path / "ws" / "alpha"),
                     "--legs", "--executor", executor, "--out", str(out), "--no-progress"])
        assert code == 0
        outs[executor] = json.loads(out.read_text())["reports"][0]
    capsys.readouterr()
    for a, b in zip(outs["ray"]["runs"], outs["serial"]["runs"], strict=True):
        assert _untimed(a["metrics"]) == _untimed(b["metrics"])
    assert outs["ray"]["runs"][0]["metrics"]["n_queries"] == 4


def test_cli_without_ray_says_how_to_install(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where it is absent
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-05.md").write_text("# Monday\n\nPool exhausted.\n")
    qf = tmp_path / "q.jsonl"
    qf.write_text(json.dumps({"qid": "1", "query": "pool", "relevant": [
        {"path": "memory/2026-01-05.md", "line": 3}]}) + "\n")
    args = ["eval", "--queries", str(qf), "--workspace", str(ws), "--provider", "none",
            "--no-progress"]
    assert main([*args, "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install" in err and ".[ray]" in err
    assert main([*args, "--address", "127.0.0.1:6379"]) == 2
    assert "--executor ray" in capsys.readouterr().err
    assert main([*args, "--executor", "ray", "--sweep"]) == 2
    assert "not --cv, --sweep" in capsys.readouterr().err
