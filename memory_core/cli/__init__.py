"""The ``memory-core`` command line (console script ``memory_core.cli:main``).

* :mod:`.main`: the parser, the static list of sub-command groups, error handling;
* :mod:`.common`: what the sub-commands share (``CliError``, ``open_index``, ``dump_json``,
  ``add_workspace_args``, ``progress_bar``);
* :mod:`.index_search` (index, search, get, status, chunk) with :mod:`.batch` (``search
  --batch``), :mod:`.evaluate` (eval), :mod:`.promote` (promote, replay), :mod:`.mcp` (mcp),
  :mod:`.watch` (watch).

Feature packages (promotion, evaluation, mcp, live) are imported inside the sub-commands that
use them, so ``memory-core search`` loads none of them at start.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .main import COMMANDS, build_parser

__all__ = ["COMMANDS", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (see :func:`memory_core.cli.main.main`).

    ``memory-core --version`` alone answers before the parser, the sub-commands and the engine
    are imported (0.3 s of imports for one line).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:
        from ..base.version import __version__

        print(f"memory-core {__version__}")
        return 0
    return _cli().main(argv)


def _cli() -> Any:
    """:mod:`.main`, imported now; the package's ``main`` stays this module's function (the
    import system sets a submodule's name on its package when it first loads it)."""
    import importlib

    module = importlib.import_module(".main", __name__)
    globals()["main"] = main_entry
    return module


main_entry = main


def __getattr__(name: str) -> Any:
    """``COMMANDS`` and ``build_parser``, from :mod:`.main` on first use."""
    if name in ("COMMANDS", "build_parser"):
        return getattr(_cli(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
