"""Shared fixtures: copies of the demo workspace (tests never write into the repo) and indexes."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # Streamlit is imported only by the tests that open the app
    from streamlit.testing.v1 import AppTest

    from tests.apptesting import OpenApp

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # an xdist worker a core (and one): a model's or BLAS's own threads would only contend with
    # the other workers' (their spinning costs CPU) -- set before anything imports torch or BLAS
    os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo-workspace"
SHARED = ROOT.parent / "shared"
GOLDENS = Path(__file__).resolve().parent / "goldens"


#: The test files that take longest on their worker in `make test-fast` (CPU seconds, their
#: children's and Ray's included, measured in session 13, longest first: the demo indexed with the
#: local model and queries asked seven ways, a 60-day replay, a Ray cluster and its Ray Data
#: actors, a killed raylet, a month of the demo home indexed with the local model, a child process
#: that loads the model). pytest-xdist hands a worker the next file when it is nearly done, so
#: these start first and the many small files even out the workers' ends (longest-first).
DEAREST_FIRST = ("test_cli_batch_group.py", "test_promotion_failures.py", "test_index_ray.py",
                 "test_no_tracebacks.py", "test_evidence.py", "test_app_heap.py")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker a core and one more, whose tests run while another worker's wait on
    a subprocess, a server or a timer (1389 fast tests on two cores: 5 min 50 s on two workers,
    5 min 10 s on three, the same CPU)."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_configure(config: pytest.Config) -> None:
    """Keep the collection's order for xdist's files: its default reorders them by their number
    of tests, which sends a file of one long test (``DEAREST_FIRST``) to the end of the run."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the notebooks nbmake collects (``pytest --nbmake tests notebooks``) ``notebook``.

    Under pytest-xdist's ``--dist loadfile`` (the Makefile's PYTEST_PAR) a file runs on one
    worker and builds its module fixtures (an index of the demo, an app) once. The files of
    ``DEAREST_FIRST`` run first (a stable sort: the others keep their order).
    """
    rank = {name: i for i, name in enumerate(DEAREST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """End every run with what was skipped, grouped by reason, so a run that passed while
    skipping the browser, npm or dataset groups says so in its last lines."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        terminalreporter.write_line("skipped: nothing")
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        longrepr = rep.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.section(f"skipped: {len(skipped)} tests")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{n:4d}  {reason}")


def copy_demo(dest: Path) -> Path:
    ws = dest / "demo-workspace"
    shutil.copytree(DEMO, ws, ignore=shutil.ignore_patterns(".memory"))
    return ws


@pytest.fixture
def demo_ws(tmp_path: Path) -> Path:
    """A fresh, writable copy of the demo workspace."""
    return copy_demo(tmp_path)


def _demo_indexed_once(factory: pytest.TempPathFactory, name: str, profile: str) -> Path:
    """A copy of the demo indexed under ``profile`` with the local model, built once per run.

    Under pytest-xdist each worker is its own session: the first worker here builds the index in
    the run's base temp (under a file lock) and every worker copies it into its own temp, so the
    model embeds the demo once per run and no two processes open one index. A copied workspace
    keeps its index (the files' mtimes are copied; a sync of the copy writes nothing).
    """
    from memory_core import MemoryIndex

    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    built = shared / f"{name}-built"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not built.is_dir():
            building = shared / f"{name}-building"
            shutil.rmtree(building, ignore_errors=True)
            with MemoryIndex.open(copy_demo(building), profile=profile) as idx:
                idx.sync()
            building.rename(built)
    ws = factory.mktemp(name) / "demo-workspace"
    shutil.copytree(built / "demo-workspace", ws)
    return ws


@pytest.fixture(scope="session")
def indexed_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo copy indexed once with the real local model (default profile), shared read-only."""
    return _demo_indexed_once(tmp_path_factory, "indexed", "default")


@pytest.fixture
def indexed_demo_copy(indexed_demo: Path, tmp_path: Path) -> Path:
    """A private, writable copy of :func:`indexed_demo` (the demo indexed with the local model,
    default profile), for a test that changes the files or the index: the copy keeps the index
    and the files' mtimes, so it is exactly the index a sync of a fresh demo copy writes, without
    embedding the demo again (~9 CPU s a build)."""
    ws = tmp_path / "demo-workspace"
    shutil.copytree(indexed_demo, ws)
    return ws


@pytest.fixture(scope="session")
def indexed_demo_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo indexed under the reference profile (reference chunking), local model."""
    return _demo_indexed_once(tmp_path_factory, "indexed-ref", "reference")


# --------------------------------------------------------------------------- workbench AppTests


@pytest.fixture
def open_app(monkeypatch: pytest.MonkeyPatch) -> OpenApp:
    """Open the workbench on ``workspace`` as a Streamlit AppTest, optionally on ``page``.

    The app is pointed (through its environment variables) at the workspace, at a private cache
    beside it (``<workspace>/../cache``, so a module-scoped workspace keeps its index and map
    coordinates between tests), at the embedding ``provider`` and, when given, at ``datasets``
    as the evaluation data. UMAP stays off. ``timeout`` bounds each script run (the first one
    indexes the workspace); it is an upper bound for a loaded machine, not an expected time.
    The app must start without an exception.
    """
    from streamlit.testing.v1 import AppTest

    from tests.apptesting import APP, workbench_env

    def _open(workspace: Path, page: str | None = None, *, provider: str = "none",
              datasets: Path | None = None, timeout: float = 180) -> AppTest:
        for k, v in workbench_env(workspace, workspace.parent / "cache", provider).items():
            monkeypatch.setenv(k, v)
        if datasets is not None:
            monkeypatch.setenv("MEMORY_WORKBENCH_DATASETS", str(datasets))
        at = AppTest.from_file(str(APP), default_timeout=timeout).run()
        if page is not None:
            at.switch_page(page).run()
        assert not at.exception, at.exception
        return at

    return _open


@pytest.fixture(scope="module")
def module_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo copy shared by one test module (its index is built once, by the first test)."""
    return copy_demo(tmp_path_factory.mktemp("app"))
