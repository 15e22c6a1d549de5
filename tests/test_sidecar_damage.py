"""Damaged search sidecars never change a result (issue 19 item 7).

Bytes flipped in ``<index>.vectors`` (its matrix, its id column) or in ``<index>.postings``
(its posting rows, its id column): every search must answer exactly as the same index without
its sidecars answers (sqlite-vec and FTS5), never a wrong hit or a traceback, and ``memory-core
index`` rewrites the damaged file, after which ``status`` says the sidecar answers again. A
sidecar of the previous format version is stale and rewritten too. Real SQLite, FTS5, sqlite-vec
and the real local model; the postings threshold is lowered so this small index gets one.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core.storage import postings, sidecar
from memory_core.storage import vectors as vec

try:  # the postings threshold lowered for the module (this small index gets a sidecar)
    from tests.test_postings import low_threshold
except ImportError:  # tests/ is not a package: pytest put tests/ itself on sys.path
    from test_postings import low_threshold  # type: ignore[no-redef]  # noqa: F401

QUERIES = ["postgres replica lag", "nightly backup to glacier", "cameras on vlan 20",
           "连接池 耗尽", "espresso machine"]
TOPICS = ["postgres replica lag", "nightly backup to glacier", "vlan 20 for the cameras",
          "cookie expiry in the crawler", "on-call rotation starts monday", "连接池 耗尽 日志",
          "the espresso machine broke again"]


def _workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\n\nThe router lives in the garage.\n")
    rng = random.Random(7)
    for i, topic in enumerate(TOPICS):
        lines = [f"- {topic}, note {j}: {' '.join(rng.sample(TOPICS, 2))}" for j in range(24)]
        (root / "memory" / f"2026-11-{i + 1:02d}.md").write_text(
            f"# Day {i}\n\n## {topic}\n\n" + "\n".join(lines) + "\n")
    return root


Built = tuple[Path, Path, dict[str, bytes], dict[str, list[list[tuple]]]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, low_threshold: None) -> Built:
    """A workspace indexed with both sidecars, their good bytes, and the results with both,
    and with each one removed (what a damaged one must answer: exactly the index's own path)."""
    ws = _workspace(tmp_path_factory.mktemp("dmg") / "ws")
    with MemoryIndex.open(ws) as idx:
        idx.sync()
        db = idx.store_path
    files = {"vectors": vec.sidecar_path(db), "postings": postings.sidecar_path(db)}
    good = {k: p.read_bytes() for k, p in files.items()}
    answers = {"both": _results(ws)}
    for k, p in files.items():
        p.unlink()
        answers[k] = _results(ws)  # this sidecar absent, the other one answering
        p.write_bytes(good[k])
    return ws, db, good, answers


def _results(ws: Path) -> list[list[tuple]]:
    """Every query's hits, in a new process's view (nothing mapped yet), without the sync a
    first search runs (it would rewrite the sidecar before the search reads it)."""
    with MemoryIndex.open(ws) as idx:
        idx.auto_sync = False
        return [[(h.id, h.path, h.start_line, h.score, h.vector_score, h.text_score)
                 for h in idx.search(q, max_results=10).hits] for q in QUERIES]


def _header(path: Path) -> dict:
    with open(path, "rb") as f:
        magic = f.read(8)
        f.seek(0)
        header = sidecar.read_header(f, magic)
    assert header is not None
    return header


def _content(data: bytes) -> tuple[dict, dict[str, bytes]]:
    """A sidecar's header without its seal (the time it was written) or layout, and each of
    its arrays."""
    hlen = int.from_bytes(data[8:16], "little")
    header = json.loads(data[16:16 + hlen])
    offsets, sizes = header.pop("offsets"), header.pop("sizes")
    for k in ("sealedNs", "headerCrc"):
        header.pop(k)
    return header, {k: data[o:o + sizes[k]] for k, o in offsets.items()}


def _flip(path: Path, part: str, count: int, mask: int, seed: int = 3) -> None:
    """XOR ``count`` bytes of the sidecar ``part`` (its region as the header lists it)."""
    header = _header(path)
    data = bytearray(path.read_bytes())
    lo, size = header["offsets"][part], header["sizes"][part]
    rng = random.Random(seed)
    for at in rng.sample(range(lo, lo + size), min(count, size)):
        data[at] ^= mask
    path.write_bytes(bytes(data))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memory_core", *args], capture_output=True,
                          text=True, timeout=300)


def _answering(ws: Path) -> tuple[str, bool]:
    """What ``status`` says in a new process: who answers the vector leg, and whether the
    postings do."""
    with MemoryIndex.open(ws) as idx:
        st = idx.status().to_json()
    return st["vector"]["search"], st["fts"]["postings"]


CASES = [("vectors", "matrix", 200, 0xFF), ("vectors", "ids", 40, 0x80),
         ("vectors", "rowids", 8, 0x01), ("postings", "rows", 60, 0x04),
         ("postings", "tfs", 60, 0x10), ("postings", "ids", 40, 0x80),
         ("postings", "doclen", 20, 0x40), ("postings", "ptr", 8, 0x02)]


@pytest.mark.parametrize(("which", "part", "count", "mask"), CASES)
def test_a_damaged_sidecar_answers_like_no_sidecar_and_index_repairs_it(
        built: Built, which: str, part: str, count: int, mask: int) -> None:
    ws, db, good, answers = built
    path = vec.sidecar_path(db) if which == "vectors" else postings.sidecar_path(db)
    try:
        _flip(path, part, count, mask)
        assert path.read_bytes() != good[which]
        assert _results(ws) == answers[which]
        vector, posts = _answering(ws)  # status tells the truth: not the damaged file
        assert (vector, posts) == (("sqlite-vec", True) if which == "vectors"
                                   else ("sidecar", False))
        proc = _cli("index", "--workspace", str(ws))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert _answering(ws) == ("sidecar", True)
        assert _content(path.read_bytes()) == _content(good[which])  # rewritten, as it was
        assert _results(ws) == answers["both"]
    finally:
        path.write_bytes(good[which])


def test_good_sidecars_rank_like_the_index_itself(built: Built) -> None:
    ws, _, _, answers = built
    assert _answering(ws) == ("sidecar", True)
    assert all(answers["both"])
    # the mapped matrix's cosines may differ from sqlite-vec's in the last bits: same hits
    assert [[h[:3] for h in q] for q in answers["both"]] == [
        [h[:3] for h in q] for q in answers["vectors"]]
    assert answers["both"] == answers["postings"]  # FTS5's floats, bit for bit


def test_an_old_format_sidecar_is_stale_and_rewritten(built: Built) -> None:
    """A version-1 file (no version, no checksums) with the right stamp is not trusted."""
    ws, db, good, answers = built
    for which, path in (("vectors", vec.sidecar_path(db)),
                        ("postings", postings.sidecar_path(db))):
        try:
            data = path.read_bytes()
            hlen = int.from_bytes(data[8:16], "little")
            header = json.loads(data[16:16 + hlen])
            for k in ("version", "block", "crc", "sealedNs", "headerCrc"):
                header.pop(k)
            blob = json.dumps(header).encode()
            old = data[:8] + len(blob).to_bytes(8, "little") + blob
            path.write_bytes(old + b" " * (16 + hlen - len(old)) + data[16 + hlen:])
            assert _results(ws) == answers[which]
            assert _answering(ws) == (("sqlite-vec", True) if which == "vectors"
                                      else ("sidecar", False))
            with MemoryIndex.open(ws) as idx:
                idx.sync()
            assert _content(path.read_bytes()) == _content(good[which])
        finally:
            path.write_bytes(good[which])


def test_a_damaged_header_is_not_read(built: Built) -> None:
    """A digit changed inside the JSON header (here the row count) is caught too."""
    ws, db, good, answers = built
    path = vec.sidecar_path(db)
    try:
        data = bytearray(good["vectors"])
        at = data.index(b'"rows": ') + len(b'"rows": ')
        data[at] = ord("1") if data[at] != ord("1") else ord("2")
        path.write_bytes(bytes(data))
        assert _results(ws) == answers["vectors"]
    finally:
        path.write_bytes(good["vectors"])


def test_damage_that_keeps_the_mtime_is_caught_by_the_search_then_repaired(
        built: Built) -> None:
    """A sidecar untouched since written (mtime = its seal) is not read whole by a no-op
    ``index``; bits that rot with the mtime kept are caught by the search that reads them,
    which answers from the index and unseals the file, so the next ``index`` rewrites it."""
    ws, db, good, answers = built
    path = vec.sidecar_path(db)
    try:
        seal = _header(path)["sealedNs"]
        with MemoryIndex.open(ws) as idx:
            idx.sync()  # a no-op: the file is checked (it was written back) and sealed again
        assert path.stat().st_mtime_ns == seal
        _flip(path, "matrix", 200, 0xFF)
        os.utime(path, ns=(seal, seal))
        assert _answering(ws) == ("sidecar", True)  # nothing says it changed: trusted
        assert _results(ws) == answers["vectors"]  # but the search checks what it reads
        assert path.stat().st_mtime_ns != seal
        assert _answering(ws) == ("sqlite-vec", True)
        proc = _cli("index", "--workspace", str(ws))
        assert proc.returncode == 0, proc.stderr
        assert _answering(ws) == ("sidecar", True)
        assert _content(path.read_bytes()) == _content(good["vectors"])
    finally:
        path.write_bytes(good["vectors"])
