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

from .main import COMMANDS, build_parser, main

__all__ = ["COMMANDS", "build_parser", "main"]
