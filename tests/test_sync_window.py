"""A sync reads and chunks its files a window of whole groups at a time
(``memory_core.write.sync.WINDOW_CHUNKS``), so a first build no longer holds the whole workspace's
chunks before its first write: the index is the one a single window builds (same rows, vectors,
files, skipped files, the same embedding calls), and a failure in a later window still keeps
the old index whole.

A real OpenAI-compatible server on 127.0.0.1 answers with deterministic hashed vectors and
records each request's texts, so the embedding calls themselves are compared.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from memory_core import MemoryIndex
from memory_core.embeddings import EmbeddingError
from memory_core.write import sync
from memory_core.write.sync import Indexer
from tests.test_embed_ahead import _Counting
from tests.test_eval_ray import serve

WORDS = ("pool router backup firmware deadline peanut jazz glacier vlan switch dimmer hiring "
         "lunch photos gym swimming rack spare access point rollback allergy bake sale").split()


class _Recording(_Counting):
    """The counting (and failing) hashed-vector server; records each request's texts."""

    calls: ClassVar[list[tuple[str, ...]]] = []

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.lock:
            self.calls.append(tuple(json.loads(raw)["input"]))
        self.rfile = io.BytesIO(raw)  # the body again, for the server's own reading
        super().do_POST()


@pytest.fixture()
def url() -> Iterator[str]:
    _Recording.calls, _Recording.requests, _Recording.fail_after = [], 0, None
    with serve(_Recording) as u:
        yield u
    _Recording.fail_after = None


def _workspace(root: Path, url: str) -> Path:
    rng = np.random.default_rng(5)
    (root / "memory").mkdir(parents=True)
    for d in range(150):
        paras = [" ".join(rng.choice(WORDS, size=50)) for _ in range(12)]
        text = f"# Day {d + 1}\n\n" + "\n\n".join(paras) + "\n"
        (root / "memory" / f"2026-04-{d + 1:03d}.md").write_text(text, encoding="utf-8")
        if d % 40 == 3:  # the same text again, later (another window): its vectors are cached
            (root / "memory" / f"2026-05-{d + 1:03d}.md").write_text(text, encoding="utf-8")
    (root / "memory" / "2026-06-001.md").write_bytes(b"\xff\xfe not utf-8 \x00\x81")
    (root / "memory-workbench.toml").write_text(
        f'[provider]\nprovider = "openai"\nbase_url = "{url}"\nmodel = "hash-64"\n'
        'fallback = []\nbatch_items = 16\nconcurrency = 1\n\n'
        '[chunking]\ntokens = 120\noverlap = 20\n', encoding="utf-8")
    return root


def _index(ws: Path) -> dict[str, object]:
    with MemoryIndex.open(ws) as idx:
        db = idx.store.db
        return {
            "chunks": db.execute("SELECT id, path, source, start_line, end_line, hash, text, "
                                 "embedding FROM chunks ORDER BY rowid").fetchall(),
            "files": db.execute("SELECT path, source, hash, size FROM files "
                                "ORDER BY path").fetchall(),
            "skipped": db.execute("SELECT path, reason FROM skipped_files").fetchall(),
            "fts": db.execute("SELECT count(*) FROM chunks_fts").fetchall(),
            "answer": [h.path for h in idx.search("glacier rollback jazz").hits],
        }


def test_a_build_in_windows_is_the_build_in_one(tmp_path: Path, url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path / "ws", url)
    ws_w = tmp_path / "ws-windows"
    shutil.copytree(ws, ws_w)  # no index in either yet: each build embeds from nothing
    seen: list[tuple[str, int, int]] = []
    with MemoryIndex.open(ws) as idx:  # one window: the whole workspace (as before)
        one = idx.sync(progress=lambda s, d, t: seen.append((s, d, t)))
    calls_one, _Recording.calls = sorted(_Recording.calls), []
    assert one.chunks_written > 6 * 256 and one.files_failed == 1

    monkeypatch.setattr(sync, "WINDOW_CHUNKS", 2 * 256)  # each window: two groups or so
    seen_w: list[tuple[str, int, int]] = []
    with MemoryIndex.open(ws_w) as idx:
        many = idx.sync(progress=lambda s, d, t: seen_w.append((s, d, t)))
    assert sorted(_Recording.calls) == calls_one  # the same embedding calls, the same texts
    assert _index(ws_w) == _index(ws)
    assert (many.chunks_written, many.embedded, many.cache_hits, many.files_indexed,
            many.files_failed) == (one.chunks_written, one.embedded, one.cache_hits,
                                   one.files_indexed, one.files_failed)
    assert many.cache_hits > 0  # the copies in later windows were not embedded again
    # several windows, each embedded ahead on its own stream (its total is the texts so far)
    assert len({t for s, _, t in seen_w if s == "embed"}) >= 3
    assert len({t for s, _, t in seen if s == "embed"}) == 1
    # progress: writes and embeds only go forward, and end at the whole count
    for stage, last in (("write", many.chunks_written), ("embed", many.embedded)):
        done = [d for s, d, _ in seen_w if s == stage]
        assert done == sorted(done) and done[-1] == last
        assert [t for s, _, t in seen_w if s == stage][-1] == last
    assert [x for x in seen if x[0] == "write"][-1] == [x for x in seen_w
                                                          if x[0] == "write"][-1]


def test_a_failure_in_a_later_window_keeps_the_old_index(tmp_path: Path, url: str,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    ws = _workspace(tmp_path / "ws", url)
    with MemoryIndex.open(ws, overrides={"store": {"cache_enabled": False}}) as idx:
        first = idx.sync()
        config, choice, path = idx.config, idx.choice, idx.store_path
        before = _index(ws)
    monkeypatch.setattr(sync, "WINDOW_CHUNKS", 2 * 256)
    per_window = 2 * 256 // 16
    _Recording.calls = []
    _Recording.fail_after = _Recording.requests + 3 * per_window  # in the fourth window
    with pytest.raises(EmbeddingError, match="quota exceeded"):
        Indexer(ws, config, choice).sync(path, force=True)
    assert len(_Recording.calls) > 2 * per_window  # windows were written before it failed
    _Recording.fail_after = None
    assert _index(ws) == before  # the old index, whole
    assert not list(path.parent.glob("*.tmp-*"))
    with MemoryIndex.open(ws) as idx:
        assert idx.store.chunk_count() == first.chunks_written
