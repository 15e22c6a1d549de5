"""Helpers for the workbench's tests (kept out of the shipped package): a private copy of the
demo workspace and an AppTest of the app wired to it (never writing into the repository's
examples)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from workbench.state import DEMO, ROOT

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

APP = ROOT / "app.py"


def copy_demo(dest_dir: Path) -> Path:
    """Copy the demo workspace (without any index) to ``dest_dir/demo-workspace``; return it."""
    target = Path(dest_dir) / "demo-workspace"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".memory"))
    return target


def wait_healthy(url: str, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    """Wait until the Streamlit server ``proc`` at ``url`` answers its health check (the
    browser tests and ``benchmarks/bench_slider.py``); raise if it exits or stays silent."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError("streamlit did not become healthy")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def streamlit_server(script: Path, env: dict[str, str], log: Path,
                     timeout: float = 90) -> Iterator[str]:
    """``streamlit run script`` on a free port of 127.0.0.1 until the block ends (in its own
    process group: a UMAP worker dies with it); yields its URL once it answers."""
    with log.open("wb") as out:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=str(script.parent), env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc, timeout)
            yield url
        finally:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)


def workbench_env(workspace: Path, cache: Path, provider: str = "none", *,
                  umap: bool = False, watch: bool = False) -> dict[str, str]:
    """The environment variables that point the app at ``workspace`` and a private cache.

    Without ``watch`` the workbench does not follow the files itself (a test decides when its
    syncs happen); a ``memory-core watch`` process's heartbeat is still shown."""
    env = {"MEMORY_WORKBENCH_WORKSPACE": str(workspace), "MEMORY_WORKBENCH_CACHE": str(cache),
           "MEMORY_WORKBENCH_PROVIDER": provider}
    if not umap:
        env["MEMORY_WORKBENCH_NO_UMAP"] = "1"
    if not watch:
        env["MEMORY_WORKBENCH_NO_WATCH"] = "1"
    return env


class OpenApp(Protocol):
    """The ``open_app`` fixture of the tests (``tests/conftest.py``): opens the app on a
    workspace, optionally on one page, and returns the AppTest."""

    def __call__(self, workspace: Path, page: str | None = None, *, provider: str = "none",
                 datasets: Path | None = None, timeout: float = 180) -> AppTest: ...
