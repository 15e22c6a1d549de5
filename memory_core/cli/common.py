"""What every ``memory-core`` sub-command shares: errors, JSON output, opening the index,
the workspace flags (and the transcripts they name) and the progress bar.

Sub-command modules import these public names only; nothing here imports a feature package
(promotion, evaluation), so loading the CLI stays as light as the engine itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..base.config import PROFILES, PROVIDERS, SearchSettings, check_values, setting_meta
from ..index import MemoryIndex

if TYPE_CHECKING:
    from ..backends import MemoryBackend
    from ..write.sources import SourceFile

#: Exit code of every error the user can act on (bad input, missing data, refused path).
EXIT_USAGE = 2

#: ``progress(stage, done, total)``, as :meth:`MemoryIndex.sync` and the evaluator call it.
Progress = Callable[[str, int, int], None]


class CliError(Exception):
    """An error the user can act on: printed as one line, exit code 2."""


def dump_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (non-ASCII kept readable) on stdout."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def check_index_path(path: Path, what: str) -> None:
    """Refuse an index path that can never be a file: an existing folder, or a path under a
    file. ``what`` names where it came from (``--db``, ``[store] path``) in the one-line error."""
    try:
        path.stat()
    except (FileNotFoundError, NotADirectoryError):
        pass  # a new index (or one under a file: said below)
    except OSError as e:  # a symlink loop, a name too long
        raise CliError(f"{what} {path}: {e.strerror or e}") from e
    if path.is_dir():
        raise CliError(f"{what} {path} is a folder: give the path of an index file "
                       f"(for example {path / 'index.sqlite'})")
    for parent in path.parents:
        if parent.exists() or parent.is_symlink():
            if not parent.is_dir():
                raise CliError(f"{what} {path}: {parent} is a file, not a folder")
            break


def open_index(args: argparse.Namespace) -> MemoryIndex:
    """Open the index the workspace flags name (``--workspace``, ``--profile``, ``--provider``,
    ``--db``); an index path that cannot be a file is refused before anything is written."""
    overrides: dict[str, Any] = {}
    db = getattr(args, "db", None)
    if db:
        overrides["store"] = {"path": db}
    home = getattr(args, "openclaw_home", None)
    if home:
        from ..openclaw import open_home  # feature package: only when a home is asked for

        oc = open_home(home, getattr(args, "agent", None))
        idx = oc.open_index(profile=getattr(args, "profile", None),
                            provider=getattr(args, "provider", None), overrides=overrides)
    elif not getattr(args, "workspace", None):
        raise CliError("give --workspace DIR (or --openclaw-home DIR [--agent ID])")
    else:
        idx = MemoryIndex.open(args.workspace, profile=getattr(args, "profile", None),
                               provider=getattr(args, "provider", None), overrides=overrides)
    try:
        check_index_path(idx.store_path, "--db" if db else "[store] path")
    except CliError:
        idx.close()
        raise
    _announce_first_build(idx, getattr(args, "command", None))
    return idx


def transcripts_of(args: argparse.Namespace) -> list[SourceFile]:
    """The transcripts of ``--openclaw-home``'s agent, or of ``--workspace``'s ``sessions/``
    (refused in one line when the workspace is not a folder): ``queries`` and ``replay``."""
    # a feature package: loaded only when transcripts are asked for
    from ..openclaw import open_home, transcripts_of_home, transcripts_of_workspace

    if args.openclaw_home:
        home = open_home(args.openclaw_home, args.agent)
        return transcripts_of_home(home.sessions_dir, home.agent)
    ws = Path(args.workspace).expanduser()
    if not ws.is_dir():
        raise CliError(f"workspace {args.workspace} is not a folder")
    return transcripts_of_workspace(ws)


def _announce_first_build(idx: MemoryIndex, command: str | None) -> None:
    """Say on stderr that ``search`` is about to build an index from
    nothing: the first ``--profile reference`` (or a new provider) chunks and embeds the whole
    workspace again into a file of its own, which otherwise looks like a hang."""
    if command != "search" or idx.store_path.exists():  # index, mcp, watch: their own lines
        return
    print(f"note: no {idx.config.profile}-profile index for this workspace yet: building "
          f"{idx.store_path} first (chunking and embedding every file; once)",
          file=sys.stderr, flush=True)


def add_backend_arg(p: argparse.ArgumentParser) -> None:
    """Add ``--backend builtin|qmd`` (default: the workspace's ``[backend] kind``)."""
    p.add_argument("--backend", choices=["builtin", "qmd"],
                   help="memory backend (default: [backend] kind, builtin); qmd falls back to "
                   "builtin, and says why, when it cannot answer")


def open_backend_for(idx: MemoryIndex, args: argparse.Namespace) -> MemoryBackend:
    """The backend ``--backend`` (or the config) asks for, over ``idx``: the one door of
    ``search``, ``get``, ``status``, ``index``, ``watch`` and ``mcp`` (the builtin engine, or
    qmd with its fallback to builtin)."""
    from ..backends import open_backend

    return open_backend(idx, getattr(args, "backend", None))


@contextmanager
def backend_for(idx: MemoryIndex, args: argparse.Namespace) -> Iterator[MemoryBackend]:
    """:func:`open_backend_for`, released at the end (``idx`` is closed by its opener)."""
    backend = open_backend_for(idx, args)
    try:
        yield backend
    finally:
        backend.release()


def flag_of(name: str) -> str:
    """A setting's command-line flag: ``vector_weight`` → ``--vector-weight``."""
    return "--" + name.replace("_", "-")


def add_setting_flags(p: argparse.ArgumentParser, names: Sequence[str]) -> None:
    """One flag per :class:`SearchSettings` field in ``names``: its type, choices and help
    from the setting's declaration (range and reference default included in the help)."""
    for name in names:
        meta = setting_meta(SearchSettings, name)
        rng = [f"{sym} {meta[k]}" for k, sym in (("ge", "≥"), ("gt", ">"), ("le", "≤"),
                                                  ("lt", "<")) if k in meta]
        text = meta["help"] + (f" ({', '.join(rng)})" if rng else "")
        if "choices" in meta:
            p.add_argument(flag_of(name), choices=meta["choices"], help=text)
        else:
            kind = int if isinstance(meta["default"], int) else float
            p.add_argument(flag_of(name), type=kind, metavar="N", help=text)


def setting_flags(args: argparse.Namespace, names: Sequence[str], command: str
                  ) -> dict[str, Any]:
    """The given ones of ``names``' flags, checked by their declarations (one line naming the
    flag, exit 2, for a value out of range): ``{field: value}``."""
    return check_values(SearchSettings, {n: getattr(args, n, None) for n in names},
                        command, {n: flag_of(n) for n in names})


def add_workspace_args(p: argparse.ArgumentParser, profile: bool = True) -> None:
    """Add ``--workspace`` (or ``--openclaw-home`` with ``--agent``), ``--json``,
    ``--provider``, ``--db`` (and ``--profile``) to ``p``."""
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--workspace", "-w", help="the agent workspace folder")
    where.add_argument("--openclaw-home", metavar="DIR",
                       help="an OpenClaw home (~/.openclaw): its agent's workspace, sessions "
                       "and openclaw.json settings")
    p.add_argument("--agent", metavar="ID",
                   help="with --openclaw-home: the agent (default: the home's default, main)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--provider", help="embedding provider: " + ", ".join(PROVIDERS)
                   + " (none: keyword-only)")
    p.add_argument("--db", help="index file (default: inside the workspace, .memory/)")
    if profile:
        p.add_argument("--profile", choices=PROFILES, help="ranking profile (default: default)")


def _unit(stage: str) -> str:
    last = stage.rsplit(" ", 1)[-1]
    return {"scan": "file", "query": "query", "sweep": "setting",
            "sync": "second"}.get(last, "chunk")  # "waiting for another sync": seconds


def _plural(unit: str) -> str:
    """English plural of a progress unit: "query" → "queries", "file" → "files"."""
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def progress_bar(enabled: bool) -> Progress | None:
    """A ``progress(stage, done, total)`` callback for long commands, on stderr.

    On a terminal: one tqdm bar per stage. Elsewhere (a pipe, a log file) a bar would write
    every update; instead a stage prints one line when it starts, at most one every
    :data:`SUMMARY_EVERY_S` seconds while it runs, and one when it is done.
    """
    if not enabled:
        return None
    if not sys.stderr.isatty():
        return _summary_progress()
    from tqdm import tqdm  # a dependency, imported only for a bar on a terminal
    bars: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, unit=_unit(stage),
                                     file=sys.stderr, leave=False)
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return progress


#: Seconds between two summary lines of a running stage when stderr is not a terminal.
SUMMARY_EVERY_S = 2.0  # a first build under load ran 188 s with one line (issue #35)


def _summary_progress() -> Progress:
    started: dict[str, float] = {}
    last: dict[str, float] = {}

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage not in started:
            started[stage] = last[stage] = now
            if done < total:
                print(f"{stage}: {total} {_plural(_unit(stage))}…", file=sys.stderr, flush=True)
        if done >= total:
            took = now - started.pop(stage)
            last.pop(stage, None)
            print(f"{stage}: {done}/{total} done ({took:.1f} s)", file=sys.stderr, flush=True)
        elif now - last[stage] >= SUMMARY_EVERY_S:
            last[stage] = now
            print(f"{stage}: {done}/{total} ({now - started[stage]:.0f} s so far)",
                  file=sys.stderr, flush=True)

    return progress


class DeferredParser(argparse.ArgumentParser):
    """A sub-command's parser whose arguments are added the first time it is used.

    ``memory-core`` builds every sub-command's parser at start; a sub-command whose options quote
    its feature package (the promotion gates' defaults in ``--help``) passes ``configure=`` so that
    the package is imported only when that sub-command is parsed or its help is shown.
    """

    def __init__(self, *args: Any,
                 configure: Callable[[argparse.ArgumentParser], None] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._configure = configure

    def _configured(self) -> None:
        if self._configure is not None:
            configure, self._configure = self._configure, None
            configure(self)

    # override: argparse declares overloads (a namespace instance in, its type out); this
    # one signature serves both, as argparse's own body does
    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None
                         ) -> tuple[argparse.Namespace, list[str]]:
        self._configured()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._configured()
        return super().format_help()

    def error(self, message: str) -> NoReturn:
        """A bad flag: one line naming it, not the whole usage (``--help`` shows that)."""
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def format_usage(self) -> str:
        self._configured()
        return super().format_usage()
