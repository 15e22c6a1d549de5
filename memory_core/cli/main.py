"""``memory-core``: the command line, a thin mirror of :class:`memory_core.MemoryIndex`.

Every command takes ``--json`` for machine-readable output. Errors are one line on stderr and
exit code 2; nothing here writes the user's Markdown (only ``promote --apply`` writes
``MEMORY.md``).

Sub-commands live in one module per group, each with a ``register(subparsers)``; they are listed
in :data:`COMMANDS`. A new sub-command is a new module and one line there.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..base.sql import StoreFull
from ..base.version import __version__
from ..embeddings import EmbeddingError
from ..index import WorkspaceError
from ..read.reading import PathRefused
from ..storage.store import StoreError
from .common import EXIT_USAGE, CliError, DeferredParser

#: Exit code after the reader of stdout went away (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141

#: Every sub-command group (a module of this package with a ``register(subparsers)``), in the
#: order ``memory-core --help`` lists them. Imported as the parser reaches them: ``index``
#: loads only the first.
COMMANDS: tuple[str, ...] = (
    "index_search",  # index, search, get, status, chunk
    "evaluate",      # eval
    "promote",       # promote, replay
    "mcp",           # mcp (MCP server, live)
    "watch",         # watch (follow the files, sync)
    "queries",       # queries (an agent's real memory_search calls)
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``memory-core`` parser with every sub-command of :data:`COMMANDS`.

    ``command``: the sub-command about to be parsed; the groups after the one that declares it
    are then left out (declaring every group's flags was ~7 ms of a no-op ``index``). A name no
    group declares gets the whole parser, so its error lists every command as before.
    """
    parser = argparse.ArgumentParser(prog="memory-core", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"memory-core {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=DeferredParser)
    for group in COMMANDS:
        register: Callable[[Any], None] = importlib.import_module(f".{group}", __package__).register
        register(sub)
        if command is not None and command in sub.choices:
            break
    return parser


def _stdout_gone() -> int:
    """The reader of our output went away (``memory-core … | head``): stop quietly.

    Later writes (and the flush at exit) would raise again, so stdout is pointed at
    ``/dev/null``; the exit code is the one a shell reports for a command ended by SIGPIPE.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


def _oserror_line(e: OSError) -> str:
    """An ``OSError`` as ``<file>: <reason>``, without Python's ``[Errno n]`` prefix."""
    where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f is not None)
    why = e.strerror or str(e)
    return f"{where}: {why}" if where else why


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (2 with one line on stderr for a user error)."""
    given = list(sys.argv[1:] if argv is None else argv)
    # the first word is the sub-command unless it is an option (--help, --version)
    parser = build_parser(given[0] if given and not given[0].startswith("-") else None)
    args = parser.parse_args(given)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _stdout_gone()
    except StoreFull as e:
        print(f"memory-core: error: {e} (a full disk or a file-size limit; the Markdown "
              "is untouched: free some space and run it again)", file=sys.stderr)
        return EXIT_USAGE
    except (CliError, WorkspaceError, StoreError, PathRefused, EmbeddingError,
            ValueError) as e:
        print(f"memory-core: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:  # a missing file, a folder where a file was expected, a full disk …
        print(f"memory-core: error: {_oserror_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: one line all the same, the traceback when asked for
        if os.environ.get("MEMORY_CORE_DEBUG"):
            raise
        print(f"memory-core: internal error: {type(e).__name__}: {e} (MEMORY_CORE_DEBUG=1 "
              "shows the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
