"""Running the ``qmd`` CLI: where it is, its environment, one command, its JSON.

Mirrors the reference's ``qmd-process.ts`` and ``qmd-query-parser.ts``: a command that cannot be
started, exits non-zero, prints too much or runs past its timeout raises :class:`QmdError` with
the reference's message (``qmd search … failed (code 1): <stderr>``, ``… timed out after
4000ms``); a "no results found" marker is an empty list; noisy output around the JSON array is
tolerated.

qmd (npm ``@tobilu/qmd``) needs node ≥ 22. ``scripts/install-node-tools.sh`` installs node 24
and qmd into the project's git-ignored ``.tools/``; a bare ``qmd`` command is looked up on
``PATH`` first, then there, and node 24's folder goes first on the child's ``PATH``.
The child's environment is offline: every HTTP(S) proxy points at a closed local port (node 24
honours them with ``NODE_USE_ENV_PROXY=1``), so a model download can never leave the machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.locations import REPO_ROOT

#: The project's Node tools (``scripts/install-node-tools.sh``).
TOOLS_DIR = REPO_ROOT / ".tools"
#: Where the script installs the ``qmd`` launcher and node 24.
TOOLS_QMD = TOOLS_DIR / "node_modules" / ".bin" / "qmd"
TOOLS_NODE_BIN = TOOLS_DIR / "bin"
#: The reference caps a command's output at 200,000 characters.
MAX_OUTPUT_CHARS = 200_000
#: A closed local port: any HTTP(S) request of the child fails at once, never leaves the host.
OFFLINE_PROXY = "http://127.0.0.1:9"
#: The installer's hint, quoted when qmd cannot be found.
INSTALL_HINT = "run `bash scripts/install-node-tools.sh` (needs npm) to install node 24 and qmd"


class QmdError(RuntimeError):
    """A qmd command could not run, failed, timed out or answered something unreadable."""


@dataclass(frozen=True)
class QmdResult:
    stdout: str
    stderr: str
    ms: float


def resolve_command(command: str) -> str | None:
    """The executable ``command`` names, or ``None`` when there is none.

    A path (``/x/qmd``, ``./qmd``) is taken as is; a bare name is searched on ``PATH``, and
    ``qmd`` also in the project's ``.tools/`` (where the install script puts it).
    """
    cmd = command.strip()
    if not cmd:
        return None
    if os.sep in cmd or (os.altsep and os.altsep in cmd):
        p = Path(os.path.expanduser(cmd))
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(cmd)
    if found:
        return found
    if cmd == "qmd" and TOOLS_QMD.is_file():
        return str(TOOLS_QMD)
    return None


def child_path(raw: str | None) -> str:
    """``PATH`` for qmd: node 24 from ``.tools/bin`` first (qmd refuses node 20), then ours."""
    entries = [e for e in (raw or "").split(os.pathsep) if e]
    node_dir = str(TOOLS_NODE_BIN)
    if TOOLS_NODE_BIN.is_dir() and node_dir not in entries:
        entries.insert(0, node_dir)
    return os.pathsep.join(entries)


def qmd_env(xdg_config: Path, xdg_cache: Path) -> dict[str, str]:
    """The child's environment: the reference's XDG folders, no colour, and offline."""
    env = dict(os.environ)
    env.pop("INDEX_PATH", None)  # qmd's test override would move the index elsewhere
    env.update({
        "PATH": child_path(env.get("PATH")),
        "XDG_CONFIG_HOME": str(xdg_config),
        "QMD_CONFIG_DIR": str(xdg_config / "qmd"),
        "XDG_CACHE_HOME": str(xdg_cache),
        "NO_COLOR": "1",
        # Offline: no model hub, no telemetry, whatever a dependency tries.
        "HTTP_PROXY": OFFLINE_PROXY, "HTTPS_PROXY": OFFLINE_PROXY, "ALL_PROXY": OFFLINE_PROXY,
        "http_proxy": OFFLINE_PROXY, "https_proxy": OFFLINE_PROXY, "all_proxy": OFFLINE_PROXY,
        "NO_PROXY": "", "no_proxy": "", "NODE_USE_ENV_PROXY": "1",
        "HF_HUB_OFFLINE": "1", "HF_ENDPOINT": OFFLINE_PROXY,
    })
    return env


def check_available(command: str, env: Mapping[str, str], cwd: Path,
                    timeout_s: float = 2.0) -> str | None:
    """``None`` when ``command`` starts, else why not (the reference's availability check)."""
    exe = resolve_command(command)
    if exe is None:
        where = "on PATH or in .tools/" if os.sep not in command else "there"
        return f"spawn {command} ENOENT (not found {where}; {INSTALL_HINT})"
    try:
        proc = subprocess.Popen([exe, "--version"], env=dict(env), cwd=str(cwd),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as e:
        return f"spawn {command} {e.strerror or e}"
    _kill_group(proc, reap=False)  # started is enough (the reference kills it on "spawn")
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"spawn {command} timed out after {int(timeout_s * 1000)}ms"
    return None


def run_qmd(command: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path,
            timeout_ms: int | None, discard_stdout: bool = False) -> QmdResult:
    """Run ``qmd <args>``; raise :class:`QmdError` on a spawn error, non-zero exit, timeout or
    output over :data:`MAX_OUTPUT_CHARS`."""
    summary = "qmd " + " ".join(args)
    exe = resolve_command(command)
    if exe is None:
        raise QmdError(f"spawn {command} ENOENT ({INSTALL_HINT})")
    t0 = time.perf_counter()
    try:
        # Its own process group: qmd's launcher runs qmd in a child process, and a timeout must
        # end both (killing the launcher alone would leave qmd running).
        proc = subprocess.Popen(
            [exe, *args], env=dict(env), cwd=str(cwd), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL if discard_stdout else subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise QmdError(f"{summary}: spawn failed: {e.strerror or e}") from e
    try:
        out_b, err_b = proc.communicate(timeout=timeout_ms / 1000 if timeout_ms else None)
    except subprocess.TimeoutExpired as e:
        _kill_group(proc)
        raise QmdError(f"{summary} timed out after {timeout_ms}ms") from e
    except BaseException:
        _kill_group(proc)
        raise
    ms = (time.perf_counter() - t0) * 1000
    stdout = (out_b or b"").decode("utf-8", "replace")
    stderr = (err_b or b"").decode("utf-8", "replace")
    if not discard_stdout and (len(stdout) > MAX_OUTPUT_CHARS or len(stderr) > MAX_OUTPUT_CHARS):
        raise QmdError(f"{summary} produced too much output (limit {MAX_OUTPUT_CHARS} chars)")
    if proc.returncode != 0:
        raise QmdError(f"{summary} failed (code {proc.returncode}): "
                       f"{(stderr or stdout).strip()[-2000:]}")
    return QmdResult(stdout, stderr, ms)


def _kill_group(proc: subprocess.Popen[bytes], reap: bool = True) -> None:
    """SIGKILL ``proc``'s whole process group (qmd and the launcher that started it), and reap
    it unless the caller waits for it itself."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    if not reap:
        return
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, ValueError):
        pass


# --------------------------------------------------------------------------- JSON results

_NO_RESULTS_RE = re.compile(
    r"^(?:\[[^\]]+\]\s*)?(?:(?:warn(?:ing)?|info|error|qmd)\s*:\s*)+no results found\.?$")


def _no_results(raw: str) -> bool:
    for line in raw.splitlines():
        norm = " ".join(line.lower().split())
        if norm in ("no results found", "no results found.") or _NO_RESULTS_RE.match(norm):
            return True
    return False


def _line_number(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value > 0 and value == value else None


def _entry(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    def s(key: str) -> str | None:
        v = item.get(key)
        return v if isinstance(v, str) else None
    score = item.get("score")
    return {
        "docid": s("docid"), "collection": s("collection"), "file": s("file"),
        "snippet": s("snippet"), "body": s("body"), "title": s("title"),
        "score": float(score) if isinstance(score, int | float) and not isinstance(score, bool)
        and score == score and abs(score) != float("inf") else None,
        "start_line": _line_number(item.get("start_line", item.get("startLine"))),
        "end_line": _line_number(item.get("end_line", item.get("endLine"))),
        "line": _line_number(item.get("line")),
    }


def parse_query_json(stdout: str, stderr: str) -> list[dict[str, Any]]:
    """qmd's ``--json`` result array as entries (``docid, score, file, snippet, line, …``)."""
    out, err = stdout.strip(), stderr.strip()
    if (out and _no_results(out)) or (not out and err and _no_results(err)):
        return []
    if not out:
        short = err if len(err) <= 120 else err[:117] + "..."
        raise QmdError("qmd query returned invalid JSON: stdout empty"
                       + (f" (stderr: {short})" if err else ""))
    # the whole output, else the JSON value from its first "[" (noise around the array)
    for parse in (json.loads, lambda o: json.JSONDecoder().raw_decode(o, o.index("["))[0]):
        try:
            parsed = parse(out)
        except ValueError:
            continue
        if isinstance(parsed, list):
            return [e for e in (_entry(x) for x in parsed) if e is not None]
    raise QmdError("qmd query returned invalid JSON: qmd query JSON response was not an array")
