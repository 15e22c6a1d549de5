"""One dreaming run, as ``memory-core dream`` and the workbench's Promotion page make it:
the Light and/or REM phase (ingesting the session transcripts when the config says so), then,
if asked, the night's entry in ``DREAMS.md``. One function, so both faces do the same."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .diary import write_diary
from .model import Now
from .phases import DreamingConfig, PhaseReport, run_light, run_rem, run_sweep
from .signals import set_timezone

if TYPE_CHECKING:
    from ..index import MemoryIndex

PhaseChoice = Literal["light", "rem", "both"]


def dream(index: MemoryIndex, config: DreamingConfig | None = None, *,
          phase: PhaseChoice = "both", diary: bool = False, timezone: str | None = None,
          now: Now = None) -> list[PhaseReport]:
    """Run ``phase`` ("both": Light then REM, :func:`.phases.run_sweep`) under ``config``;
    with ``diary``, append what they did to ``DREAMS.md`` (its name is added to the last
    report's ``written``). ``timezone``: record recall days in this IANA zone from now on
    (an OpenClaw home's ``dreaming.timezone``)."""
    cfg = config or DreamingConfig()
    if timezone:
        set_timezone(index, timezone)
    reports = run_sweep(index, cfg, now=now) if phase == "both" else [
        (run_light if phase == "light" else run_rem)(index, cfg, now=now)]
    if diary and reports:
        written = write_diary(index, reports, now=now)
        if written:
            reports[-1].written.append(written)
    return reports
