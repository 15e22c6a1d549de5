"""The committed notebooks quote no text of the licensed evaluation sets.

LoCoMo (``../shared/datasets/locomo-dev``) is CC BY-NC and licensed to this project for
evaluation, not for redistribution inside it; a notebook run over it stores its figures, and
``scripts/run_notebooks.py`` leaves out the outputs of cells tagged ``licensed-data``. This reads
the set's questions and diary lines from ``../shared`` and fails on any that a notebook holds.
"""

from __future__ import annotations

import json

import pytest

from .conftest import ROOT, SHARED

LOCOMO = SHARED / "datasets" / "locomo-dev"


def _licensed_lines() -> set[str]:
    """LoCoMo's questions and diary lines long enough to be its own words (≥ 30 characters)."""
    out = {json.loads(line)["query"] for line in
           (LOCOMO / "queries-markdown.jsonl").read_text(encoding="utf-8").splitlines() if line}
    for diary in (LOCOMO / "markdown").glob("*/memory/*.md"):
        out.update(line.strip() for line in diary.read_text(encoding="utf-8").splitlines())
    return {t for t in out if len(t) >= 30}


@pytest.mark.skipif(not LOCOMO.is_dir(), reason="../shared/datasets/locomo-dev is absent")
def test_notebooks_quote_no_locomo_text() -> None:
    lines = _licensed_lines()
    assert len(lines) > 500  # the set was read
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        text = json.loads(nb.read_text(encoding="utf-8"))
        stored = json.dumps(text, ensure_ascii=False)
        found = sorted(t for t in lines if t in stored)
        assert not found, f"{nb.name} quotes LoCoMo: {found[:3]}"


def test_licensed_cells_are_stored_without_outputs() -> None:
    """The cells that show LoCoMo's text are tagged, and stored with the runner's note only."""
    tagged = {}
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text(encoding="utf-8"))["cells"]
        tagged[nb.name] = [c for c in cells if "licensed-data" in c["metadata"].get("tags", [])]
        for c in tagged[nb.name]:
            (out,) = c["outputs"]
            text = "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
            assert text.startswith("(output not stored: it quotes an evaluation set"), nb.name
    assert len(tagged["02-tuning-locomo.ipynb"]) == 2 and len(tagged["04-dreaming.ipynb"]) == 1
