"""The `reference` profile against outputs recorded from the real OpenClaw 2026.5.20 engine.

tests/goldens/search/*.json were recorded with ../shared/tools/openclaw-reference/run_search.sh
(see tests/goldens/README.md) on the small workspaces in tests/goldens/workspaces. The hybrid
goldens used all-MiniLM-L6-v2 served over HTTP, the same model our local provider runs in-process
(vectors agree to ~5e-7), so given the same embeddings we must return the same hits in the same
order, scores within 1e-3.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memory_core import MemoryIndex

from .conftest import GOLDENS

_INDEXES: dict[tuple[str, str], Path] = {}


def _cases() -> list[tuple[str, dict, dict]]:
    out = []
    for f in sorted((GOLDENS / "search").glob("*.json")):
        data = json.loads(f.read_text())
        if data.get("version") != "2026.5.20":
            continue
        for case in data["cases"]:
            out.append((f.stem, data, case))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("goldens")


def _index(workdir: Path, data: dict) -> MemoryIndex:
    provider = "none" if data["mode"] == "fts" else "local"
    key = (data["workspace"], provider)
    if key not in _INDEXES:
        ws = workdir / f"{Path(data['workspace']).name}-{provider}"
        shutil.copytree(GOLDENS / data["workspace"], ws)
        idx = MemoryIndex.open(ws, profile="reference", provider=provider,
                               overrides={"sources": {"sources": ["memory"]}})
        idx.sync()
        idx.close()
        _INDEXES[key] = ws
    return MemoryIndex.open(_INDEXES[key], profile="reference", provider=provider,
                            overrides={"sources": {"sources": ["memory"]}})


@pytest.mark.parametrize(("name", "data", "case"), _cases(),
                         ids=[f"{n}:{c['query'][:30]}" for n, _, c in _cases()])
def test_reference_profile_matches_openclaw(workdir: Path, name: str, data: dict,
                                            case: dict) -> None:
    idx = _index(workdir, data)
    res = idx.search(case["query"], max_results=case.get("maxResults"),
                     min_score=case.get("minScore"))
    got = [(h.path, h.start_line, h.end_line) for h in res.hits]
    want = [(r["path"], r["startLine"], r["endLine"]) for r in case["results"]]
    assert got == want
    for h, r in zip(res.hits, case["results"], strict=True):
        assert h.score == pytest.approx(r["score"], abs=1e-3)
        if r.get("textScore") is not None:
            assert h.text_score == pytest.approx(r["textScore"], abs=1e-3)
        if r.get("vectorScore") is not None:
            assert h.vector_score == pytest.approx(r["vectorScore"], abs=1e-3)
        assert h.snippet == r["snippet"]
    idx.close()


def test_there_are_goldens_for_both_modes() -> None:
    modes = {d["mode"] for _, d, _ in _cases()}
    assert modes == {"fts", "hybrid"}
