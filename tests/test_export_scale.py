"""Export into openclaw.json leaves out what means something else there (issue #35): the
default profile's minScore is a calibrated probability behind a vector floor and an abstention
gate; OpenClaw reads minScore as the reference fusion's raw weighted sum."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from memory_core.base.config import profile_settings
from memory_core.openclaw import plan_export
from memory_core.openclaw.export import score_scale_notes

from .openclaw_fixture import build_home


def test_default_profiles_min_score_is_not_written_as_a_raw_score(tmp_path: Path) -> None:
    path = build_home(tmp_path) / "openclaw.json"
    ours = replace(profile_settings("default"), min_score=0.01, max_results=5)
    notes = score_scale_notes(ours)
    assert any("calibrated" in n for n in notes) and any("floor" in n for n in notes)
    assert any("abstains" in n for n in notes)
    plan = plan_export(path, ours)
    assert "minScore: 0.01" not in plan.new_text
    assert not any("minScore" in c for c in plan.changes)
    assert any("maxResults" in c for c in plan.changes)  # the rest is still exported
    assert plan.ok and len(plan.untranslated) == 1
    assert "minScore 0.01 is not written" in plan.untranslated[0]
    # on the reference's own scale minScore is exported as before
    ref = replace(profile_settings("reference"), min_score=0.5)
    assert score_scale_notes(ref) == []
    assert any("minScore = 0.5" in c for c in plan_export(path, ref).changes)
