"""``index --executor ray``: a Ray actor pool embeds, this process writes, the vectors are the
serial path's.

Two copies of one workspace (enough text for several embedding groups), embedded through a
real OpenAI-compatible server on 127.0.0.1 that answers with deterministic hashed vectors; one
copy indexed serially, the other with ``--executor ray`` on a local Ray with two workers. The
server kills (SIGKILL) the Ray worker process behind the first request it gets while armed, so
the run also shows that a worker that dies is restarted and its group retried.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.cli import main
from tests.test_eval_ray import _Handler, serve

pytestmark = pytest.mark.slow

WORDS = ("pool router backup firmware deadline peanut jazz glacier vlan switch dimmer hiring "
         "lunch photos gym swimming rack spare access point bricked rollback allergy bake sale "
         "music night orleans wireguard noon size nightly disk usb plan").split()


class _KillingHandler(_Handler):
    """The hashed-vector server, which kills the sender of the first request once armed."""

    armed: ClassVar[bool] = False
    killed: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        cls = type(self)
        if cls.armed:
            pid = self._client_pid()
            if pid is not None and pid != os.getpid():
                cls.armed = False
                cls.killed.append(pid)
                os.kill(pid, signal.SIGKILL)  # a worker dies mid-request
                self.close_connection = True
                return
        super().do_POST()

    def _client_pid(self) -> int | None:
        import psutil

        port = self.client_address[1]
        for conn in psutil.net_connections(kind="tcp"):
            if conn.laddr and conn.laddr.port == port and conn.pid:
                return int(conn.pid)
        return None


@pytest.fixture()
def embed_url() -> Iterator[str]:
    try:
        with serve(_KillingHandler) as url:
            yield url
    finally:
        _KillingHandler.armed = False


@pytest.fixture()
def local_ray() -> Iterator[None]:
    """One local Ray for the test, started as ``--executor ray`` starts it
    (:func:`~memory_core.base.ray_session.ray_session`, no address): the pool and the CLI below
    find it initialised and use it as is, so the test starts one cluster, not two (a start and
    Ray Data's own actors cost ~20 CPU s). A command that starts and stops its own local Ray is
    tested by ``test_eval_ray.py`` (``run_eval_ray``) and by ``test_no_tracebacks.py``'s killed
    raylet (``index --executor ray`` in a child)."""
    pytest.importorskip("ray")
    from memory_core.base.ray_session import ray_session

    with ray_session():
        yield


def _workspace(root: Path, url: str) -> Path:
    """40 diaries of 12 short paragraphs each, every one ending with the same line."""
    rng = np.random.default_rng(26)
    (root / "memory").mkdir(parents=True)
    for d in range(40):
        paras = [" ".join(rng.choice(WORDS, size=60)) for _ in range(12)]
        paras.append("The weekly review happened as usual.")  # the same text in every file
        (root / "memory" / f"2026-01-{d + 1:02d}.md").write_text(
            f"# Day {d + 1}\n\n" + "\n\n".join(paras) + "\n", encoding="utf-8")
    (root / "memory-workbench.toml").write_text(
        f'[provider]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "hash-64"\n'
        'fallback = []\n\n[chunking]\ntokens = 120\noverlap = 20\n', encoding="utf-8")
    return root


def _vectors(ws: Path) -> dict[str, np.ndarray]:
    with MemoryIndex.open(ws) as idx:
        ids, mat = idx.store.embeddings()
    return dict(zip(ids, mat, strict=True))


def test_ray_index_gives_the_serial_vectors(tmp_path: Path, embed_url: str, local_ray: None,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("psutil")
    serial = _workspace(tmp_path / "serial", embed_url)
    ray_ws = tmp_path / "ray"
    shutil.copytree(serial, ray_ws)

    assert main(["index", "--workspace", str(serial), "--json", "--no-progress"]) == 0
    ser = json.loads(capsys.readouterr().out)["report"]

    seen: list[tuple[str, int, int]] = []
    _KillingHandler.armed = True
    from memory_core.embeddings.ray_pool import RayEmbedPool

    with MemoryIndex.open(ray_ws) as idx:
        par = idx.sync(executor=RayEmbedPool(idx.config.provider, actors=2),
                       progress=lambda s, d, t: seen.append((s, d, t)))
    assert _KillingHandler.killed, "no Ray worker was killed: the retry went untested"
    assert ser["embedded"] > 256 and par.embedded == ser["embedded"]  # several groups
    assert par.cache_hits == ser["cache_hits"]
    assert par.chunks_written == ser["chunks_written"]
    embeds = [(d, t) for s, d, t in seen if s == "embed"]
    assert embeds[0] == (0, par.embedded) and embeds[-1] == (par.embedded, par.embedded)

    a, b = _vectors(serial), _vectors(ray_ws)
    assert a.keys() == b.keys() and len(a) == ser["chunks_written"]
    assert all(np.array_equal(a[k], b[k]) for k in a)  # the same floats, bit for bit

    # the CLI face: an edit re-embeds only the changed file, with the pool, same vectors again
    for ws in (serial, ray_ws):
        f = ws / "memory" / "2026-01-03.md"
        f.write_text(f.read_text(encoding="utf-8") + "\nA new line about the glacier.\n",
                     encoding="utf-8")
    out = []
    for extra in ([str(serial)], [str(ray_ws), "--executor", "ray", "--actors", "2"]):
        assert main(["index", "--workspace", *extra, "--json", "--no-progress"]) == 0
        text = capsys.readouterr().out
        out.append(json.loads(text)["report"])
    assert len(out) == 2 and out[0]["embedded"] == out[1]["embedded"] > 0
    a, b = _vectors(serial), _vectors(ray_ws)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_cli_flags_without_ray_executor(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-01-05.md").write_text("# Monday\n\nPool exhausted.\n")
    args = ["index", "--workspace", str(ws), "--provider", "none", "--no-progress"]
    assert main([*args, "--address", "127.0.0.1:6379"]) == 2
    assert "--executor ray" in capsys.readouterr().err
    assert main([*args, "--executor", "ray", "--actors", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as where it is absent
    assert main([*args, "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install" in err and ".[ray]" in err
