"""Ray for the commands that can fan out (``eval`` and ``index --executor ray``): import it
only when asked, and start or join a cluster for the length of one command.

Ray is an optional extra (``pip install -e '.[ray]'``). Without an address Ray starts a private
local cluster (:data:`LOCAL_CPUS` worker CPUs, no dashboard, bound to 127.0.0.1, its session
files in a temporary folder) and stops it afterwards. With an address (``ray://host:10001`` or
``host:6379``) it joins a running cluster, whose nodes must have this package installed and see
the same paths (a shared filesystem). A Ray already initialised by the caller is used as is.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Worker CPUs of the local cluster started when no address is given.
LOCAL_CPUS = 2
#: Environment the workers need to find the same data, cache and offline model as the driver.
FORWARDED_ENV = ("MEMORY_WORKBENCH_CACHE", "MEMORY_WORKBENCH_DATASETS", "HF_HUB_OFFLINE",
                 "TRANSFORMERS_OFFLINE", "HF_HOME", "TOKENIZERS_PARALLELISM")
INSTALL_HINT = ("--executor ray needs Ray, an optional extra: "
                ".venv/bin/pip install -c constraints.txt -e '.[ray]'")


class RayUnavailable(RuntimeError):
    """Ray is not installed (the CLI prints :data:`INSTALL_HINT` and exits with code 2)."""


def ray_available() -> bool:
    """True when the ``ray`` package can be imported here."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def import_ray() -> Any:
    """The ``ray`` module, or :class:`RayUnavailable` with the install hint."""
    try:
        import ray
    except ImportError as e:
        raise RayUnavailable(INSTALL_HINT) from e
    return ray


def init_ray(ray: Any, address: str | None) -> str | None:
    """Connect to ``address`` or start the private local cluster; return its temp folder."""
    env = {k: v for k, v in os.environ.items() if k in FORWARDED_ENV}
    runtime_env = {"env_vars": env} if env else None
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False,
                 logging_level="ERROR")
        return None
    # Ray's session folder holds Unix sockets, whose paths must stay short: /tmp, not the cwd.
    temp = tempfile.mkdtemp(prefix="mcray-", dir="/tmp" if os.path.isdir("/tmp") else None)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report leaves the machine
    ray.init(address="local", num_cpus=LOCAL_CPUS, include_dashboard=False,
             _node_ip_address="127.0.0.1", _temp_dir=temp, runtime_env=runtime_env,
             log_to_driver=False, logging_level="ERROR", configure_logging=False)
    return temp


@contextmanager
def ray_session(address: str | None = None) -> Iterator[Any]:
    """``ray`` connected for the ``with`` block: started (and stopped) here unless the caller
    already initialised it. Raises :class:`RayUnavailable` when Ray is not installed."""
    ray = import_ray()
    started_here = not ray.is_initialized()
    temp = init_ray(ray, address) if started_here else None
    try:
        yield ray
    finally:
        try:
            if started_here:
                ray.shutdown()
        finally:  # a raylet killed may fail the shutdown: its folder goes all the same
            if temp:
                shutil.rmtree(temp, ignore_errors=True)
