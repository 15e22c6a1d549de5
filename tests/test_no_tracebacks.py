"""Every command on hostile input: a right answer, or one line naming the problem (issue #33).

A table of command lines, each run on copies of the demo workspace and the demo home with
missing, looping and odd paths, folders where files are expected, files that are not ours,
broken UTF-8, binary, numbers out of range, damaged ``memory-workbench.toml`` and
``openclaw.json``, bad query, qrels and run files. Each failed on the code before this test
(a traceback, or a silent wrong answer such as a sweep of ``--fusions bogus``) unless its row
says ``kept``, a case that held and stays held.

The table runs in one child process (``memory_core.cli.main`` once per row, its stderr
captured): a row costs milliseconds instead of a start-up each. The CLI's last resort turns any
unexpected exception into one ``internal error`` line, so each row asserts that it did not
come to that: a real error names the problem. Cases that need a child of their own (a file-size
limit, a killed raylet) are separate tests below.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import ROOT, copy_demo

#: (id, argv with {ws} {home} {f} {loop} placeholders, expected: "ok" or a piece of the line)
CASES: list[tuple[str, str, str]] = [
    # workspaces that are no workspace: a loop, the root, system and temp folders
    ("ws-loop", "search x -w {loop} --provider none", "does not exist"),
    ("home-loop", "status --openclaw-home {loop} --provider none", "is not a folder"),
    ("watch-loop", "watch --once -w {loop} --provider none", "does not exist"),
    ("ws-tmp", "status -w /tmp --provider none", "shared system folder"),
    ("ws-root", "status -w / --provider none", "file-system root"),
    ("ws-etc", "index -w /etc --provider none", "system folder /etc"),
    ("ws-missing", "search x -w {f}/missing --provider none", "does not exist"),  # kept
    ("ws-file", "search x -w {f}/empty.txt --provider none", "not a folder"),  # kept
    # index paths
    ("db-loop", "search x -w {ws} --provider none --db {loop}", "symbolic links"),  # kept
    ("db-binary", "status -w {ws} --provider none --db {f}/binary.bin", "not an index"),  # kept
    ("db-devnull", "status -w {ws} --provider none --db /dev/null", "regular file"),  # kept
    ("db-folder", "index -w {ws} --provider none --db {f}/adir", "is a folder"),  # kept
    # numbers and names out of range
    ("max-results-neg", "search x -w {ws} --provider none --max-results -1",
     "--max-results"),  # kept
    ("max-results-nan", "search x -w {ws} --provider none --max-results nan", "--max-results"),
    ("min-score-nan", "search x -w {ws} --provider none --min-score nan", "finite"),  # kept
    ("sources-typo", "search x -w {ws} --provider none --sources memroy", "--sources"),
    ("chunk-tokens-0", "chunk {ws}/MEMORY.md --tokens 0", "--tokens"),
    ("chunk-overlap-neg", "chunk {ws}/MEMORY.md --overlap -5", "--overlap"),
    ("chunk-folder", "chunk {f}/adir", "Is a directory"),  # kept
    ("get-escape", "get ../../etc/passwd -w {ws} --provider none", ".md"),  # kept
    ("get-blank", "get '' -w {ws} --provider none", "path required"),  # kept
    ("batch-folder", "search -w {ws} --provider none --batch {f}/adir",
     "Is a directory"),  # kept
    ("batch-binary", "search -w {ws} --provider none --batch {f}/binary.bin", "ok"),  # kept
    ("batch-nul", "search -w {ws} --provider none --batch {f}/nul.jsonl", "ok"),  # kept
    # damaged settings
    ("toml-folder", "status -w {ws_tomldir} --provider none", "cannot read"),
    ("toml-broken", "status -w {ws_tomlbad} --provider none", "memory-workbench.toml"),  # kept
    ("toml-binary", "status -w {ws_tomlbin} --provider none", "memory-workbench.toml"),  # kept
    ("oc-broken", "status --openclaw-home {home_bad} --provider none", "JSON5"),  # kept
    ("oc-array", "status --openclaw-home {home_arr} --provider none", "an object"),  # kept
    ("oc-folder", "status --openclaw-home {home_dir} --provider none", "cannot read"),  # kept
    ("oc-agent", "status --openclaw-home {home} --agent nobody --provider none",
     "'nobody'"),  # kept
    # evaluation
    ("eval-ws-missing", "eval -q {f}/q.jsonl -w {f}/missing --provider none", "not a folder"),
    ("eval-empty", "eval -q {f}/empty.jsonl -w {ws} --provider none", "no labelled query"),
    ("eval-limit", "eval -q {f}/q.jsonl -w {ws} --provider none --limit -1", "--limit"),
    ("eval-folds", "eval -q {f}/q.jsonl -w {ws} --provider none --cv --folds 0", "--folds"),
    ("sweep-weight", "eval -q {f}/q.jsonl -w {ws} --provider none --sweep "
     "--vector-weights 0.5,2", "--vector-weights"),
    ("sweep-nan", "eval -q {f}/q.jsonl -w {ws} --provider none --sweep --min-scores nan",
     "--min-scores"),
    ("sweep-fusion", "eval -q {f}/q.jsonl -w {ws} --provider none --sweep --fusions bogus",
     "--fusions"),
    ("sweep-mult", "eval -q {f}/q.jsonl -w {ws} --provider none --sweep --multipliers 0",
     "--multipliers"),
    ("eval-binary", "eval -q {f}/binary.bin -w {ws} --provider none",
     "binary.bin:1: not"),  # kept
    ("eval-set-nan", "eval -q {f}/q.jsonl -w {ws} --provider none --set max_results=nan",
     "max_results"),  # kept
    ("eval-out-folder", "eval -q {f}/q.jsonl -w {ws} --provider none --no-progress --out {f}/adir",
     "Is a directory"),  # kept
    ("qrels-nan", "eval -q {f}/q.jsonl -w {ws} --provider none --qrels {f}/nan.qrels",
     "whole number"),  # kept
    ("run-nan", "eval compare {f}/nan.run {f}/nan.run --qrels {f}/q.qrels",
     "not a number"),  # kept
    ("lme-binary", "eval -q longmemeval-s:{f}/binary.bin", "not LongMemEval"),  # kept
    ("eval-action", "eval bogus", "unknown action"),  # kept
    # promotion, replay, dreaming
    ("gate-nan", "promote -w {ws} --provider none --min-score nan", "finite"),
    ("gate-inf", "promote -w {ws} --provider none --max-age-days 1e999", "finite"),
    ("now-year-1", "dream -w {ws} --provider none --now 0001-01-01T00:00:00", "1970"),
    ("now-bogus", "promote -w {ws} --provider none --now bogus", "ISO 8601"),  # kept
    ("timezone", "promote -w {ws} --provider none --timezone Mars/Olympus",
     "time zone"),  # kept
    ("impact-missing", "promote -w {ws} --provider none --preview --impact {f}/missing",
     "No such file or directory"),
    ("replay-days", "replay -w {ws} --provider none --queries {f}/q.jsonl --days 99999999",
     "at most"),
    ("replay-empty", "replay -w {ws} --provider none --queries {f}/empty.jsonl",
     "no queries"),  # kept
    # servers and the rest
    ("mcp-port", "mcp -w {ws} --provider none --transport http --port 99999", "--port"),  # kept
    ("mcp-open", "mcp -w {ws} --provider none --transport http --host 0.0.0.0",
     "token"),  # kept
    ("queries-missing", "queries -w {f}/missing", "not a folder"),  # kept
    ("ray-actors", "index -w {ws} --provider none --executor ray --actors 0",
     "at least 1"),  # kept
]

#: Runs each argv list of the JSON file given with ``memory_core.cli.main``; prints one JSON
#: list of {rc, err}. An exception out of ``main`` (there should be none) is put in ``err``.
RUNNER = """
import contextlib, io, json, sys, traceback
from memory_core.cli import main
out = []
for argv in json.load(open(sys.argv[1])):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 2
        except BaseException:
            rc = -1
            traceback.print_exc(file=err)
    out.append({"rc": rc, "err": err.getvalue()})
print(json.dumps(out))
"""


def _hostile_files(root: Path) -> dict[str, str]:
    """The demo copies and the bad files the table names, under ``root``."""
    f = root / "f"
    (f / "adir").mkdir(parents=True)
    (f / "empty.txt").write_bytes(b"")
    (f / "empty.jsonl").write_bytes(b"")
    (f / "binary.bin").write_bytes(bytes(range(256)) * 8)
    (f / "nul.jsonl").write_bytes(b'{"query": "a\x00b"}\n')
    (f / "q.jsonl").write_text('{"qid": "q1", "query": "pipeline", '
                               '"relevant": [{"path": "MEMORY.md", "line": 1}]}\n')
    (f / "q.qrels").write_text("q1 0 MEMORY.md 1\n")
    (f / "nan.qrels").write_text("q1 0 MEMORY.md nan\n")
    (f / "nan.run").write_text("q1 Q0 MEMORY.md 1 nan tag\n")
    loop = f / "loop-a"
    loop.symlink_to(f / "loop-b")
    (f / "loop-b").symlink_to(loop)
    ws = copy_demo(root)
    spots = {"ws": str(ws), "f": str(f), "loop": str(loop)}
    for name, content in (("tomldir", None), ("tomlbad", b"not = [toml\n"),
                          ("tomlbin", bytes(range(128, 256)))):
        copy = copy_demo(root / name)
        toml = copy / "memory-workbench.toml"
        toml.unlink()
        if content is None:
            toml.mkdir()
        else:
            toml.write_bytes(content)
        spots[f"ws_{name}"] = str(copy)
    for name, text in (("home", None), ("home_bad", "{ agents: [\n"), ("home_arr", "[1, 2]\n"),
                       ("home_dir", "")):
        home = root / name
        shutil.copytree(ROOT / "examples" / "demo-home", home,
                        ignore=shutil.ignore_patterns(".memory"))
        if text == "":
            (home / "openclaw.json").unlink()
            (home / "openclaw.json").mkdir()
        elif text is not None:
            (home / "openclaw.json").write_text(text)
        spots[name] = str(home)
    return spots


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every row of :data:`CASES` run once, in one child: id → {rc, err}."""
    import shlex

    root = tmp_path_factory.mktemp("hostile")
    spots = _hostile_files(root)
    argvs = [shlex.split(line.format(**spots)) for _, line, _ in CASES]
    (root / "cases.json").write_text(json.dumps(argvs))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(root / "cases.json")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    return {cid: r for (cid, _, _), r in zip(CASES, results, strict=True)}


@pytest.mark.parametrize(("cid", "expected"), [(c[0], c[2]) for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_hostile_input_gets_an_answer_or_one_line(table: dict[str, dict[str, Any]], cid: str,
                                                    expected: str) -> None:
    rc, err = table[cid]["rc"], table[cid]["err"]
    assert "Traceback" not in err and "internal error" not in err, err
    if expected == "ok":
        assert rc == 0, err
        return
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("note: ")]
    assert rc == 2, (rc, err)
    assert len(lines) == 1, err
    assert expected in lines[0] and "[Errno" not in lines[0], lines[0]


# ------------------------------------------------------------------ cases that need a child


def _limit_file_size(kib: int) -> Any:
    def limit() -> None:  # a nearly full disk, without root: writes past it fail (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
    return limit


@pytest.mark.parametrize("kib", [8, 120, 300])
def test_a_full_disk_fails_index_in_one_line_and_leaves_no_temp_index(tmp_path: Path,
                                                                      kib: int) -> None:
    """``index --force`` builds aside; a write refused at any point of it (the schema, a
    group's commit) is one line, exit 2, and the temporary index is gone at once. Before: a
    traceback (``disk I/O error``) or 'cannot rollback' with the temp file left behind."""
    ws = copy_demo(tmp_path)
    cli = [sys.executable, "-m", "memory_core", "index", "-w", str(ws), "--provider", "none",
           "--no-progress"]
    assert subprocess.run(cli, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
    before = (ws / ".memory" / "bounded-none.sqlite").read_bytes()
    proc = subprocess.run([*cli, "--force"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, preexec_fn=_limit_file_size(kib))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1 and "disk I/O error" in lines[0], proc.stderr
    assert not list((ws / ".memory").glob("*.tmp-*")), sorted((ws / ".memory").iterdir())
    assert (ws / ".memory" / "bounded-none.sqlite").read_bytes() == before  # the old one kept


def test_a_file_past_path_max_is_a_warning_naming_it_and_counted(tmp_path: Path) -> None:
    """kept: a diary whose path is past PATH_MAX is skipped with a warning naming it, and
    ``status`` counts it among the skipped files."""
    ws = copy_demo(tmp_path)
    deep = ws / "memory"
    fd = os.open(deep, os.O_RDONLY)
    # folders of 250 characters, the deepest still under PATH_MAX (listable), its file past it
    levels = -(-(3841 - len(str(deep))) // 251)  # the folder 3841..4091 long, its leaf <= 255
    leaf_name = "z" * (4096 - len(str(deep)) - 251 * levels - 3) + ".md"  # the path: 4097
    try:  # built relative to a folder descriptor: the whole path is too long for one call
        name = "d" * 250
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        leaf = os.open(leaf_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"# deep\nzebrafish\n")
        os.close(leaf)
    finally:
        os.close(fd)
    cli = [sys.executable, "-m", "memory_core"]
    proc = subprocess.run([*cli, "index", "-w", str(ws), "--provider", "none", "--no-progress"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "1 skipped" in proc.stdout and leaf_name in proc.stderr, proc.stdout + proc.stderr
    status = subprocess.run([*cli, "status", "-w", str(ws), "--provider", "none"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert "Files skipped (unreadable; see warnings): 1" in status.stdout, status.stdout


@pytest.mark.slow
def test_the_raylet_killed_under_index_executor_ray_is_one_line(tmp_path: Path) -> None:
    """``index --executor ray`` with its raylet killed (SIGKILL) mid-embedding: exit 2 and one
    ``memory-core: error`` line naming Ray's error, not a traceback (before: ``ActorUnavailable
    Error``'s traceback; with ``fallback = []``, 'no provider could start' instead)."""
    pytest.importorskip("ray")
    psutil = pytest.importorskip("psutil")
    from tests.test_eval_ray import _Handler, serve
    from tests.test_index_ray import _workspace

    asked: list[int] = []

    class Slow(_Handler):
        def do_POST(self) -> None:
            asked.append(1)
            time.sleep(0.3)  # embedding lasts long enough to kill the raylet in the middle
            super().do_POST()

    with serve(Slow) as url:
        ws = _workspace(tmp_path / "ws", url)
        proc = subprocess.Popen([sys.executable, "-m", "memory_core", "index", "-w", str(ws),
                                 "--executor", "ray", "--actors", "2", "--no-progress"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        killed = False
        deadline = time.monotonic() + 240
        while not killed and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
            if len(asked) < 3:
                continue
            try:  # Ray's workers come and go: one may exit between listing and naming it
                for child in psutil.Process(proc.pid).children(recursive=True):
                    if child.name() == "raylet":
                        child.send_signal(signal.SIGKILL)
                        killed = True
            except psutil.NoSuchProcess:
                continue
        _, err = proc.communicate(timeout=300)
    assert killed, "the raylet was never seen: nothing was tested"
    assert proc.returncode == 2 and "Traceback" not in err, err[-3000:]
    last = [ln for ln in err.splitlines() if ln.strip()][-1]
    assert last.startswith("memory-core: error: ray executor:"), err[-3000:]


def test_a_search_on_a_locked_index_says_it_answered_from_the_last_state(tmp_path: Path) -> None:
    """Another process holds the index's write lock while a diary line is added: ``search``
    answers from what was committed and says so (before: a silent 'No results.')."""
    ws = copy_demo(tmp_path)
    cli = [sys.executable, "-m", "memory_core"]
    args = ["-w", str(ws), "--provider", "none"]
    assert subprocess.run([*cli, "index", *args], cwd=ROOT, capture_output=True,
                          timeout=300).returncode == 0
    hold = ("import sys, time\nfrom memory_core.base.sql import connect\n"
            "c = connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN EXCLUSIVE')\n"
            "print('held', flush=True)\ntime.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", hold,
                               str(ws / ".memory" / "bounded-none.sqlite")], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (ws / "MEMORY.md").open("a", encoding="utf-8") as fh:
            fh.write("- zebra stripes on the new rack\n")
        proc = subprocess.run([*cli, "search", "zebra", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "answered from its last committed state" in proc.stderr, proc.stderr
