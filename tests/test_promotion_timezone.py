"""Recall days in the configured timezone (issue 25 item 3; spec §6.2: "today's day bucket
(formatted in the configured timezone)"). UTC until a workspace sets one."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_core import MemoryIndex
from memory_core import promotion as pr
from memory_core.cli import main
from memory_core.openclaw.config import dreaming_timezone

# 20:30 UTC on 30 November is already 1 December in Tokyo, still 30 November in New York
AT = datetime(2026, 11, 30, 20, 30, tzinfo=UTC)


def _days(tmp_path: Path, profile: str, timezone: str | None) -> list[str]:
    ws = tmp_path / f"{profile}-{timezone}".replace("/", "-")
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-29.md").write_text("# 2026-11-29\n\nThe ferry leaves at nine.\n",
                                                 encoding="utf-8")
    with MemoryIndex.open(ws, provider="none", profile=profile) as idx:
        idx.sync()
        if timezone:
            pr.set_timezone(idx, timezone)
        assert pr.record_search(idx, "ferry", idx.search("ferry").hits, now=AT) == 1
        with pr.state_of(idx) as st:
            (entry,) = st.recall_entries()
            (event,) = st.recall_events(entry["key"])
    assert [event["day"]] == entry["recall_days"]
    return list(entry["recall_days"])


@pytest.mark.parametrize("profile", ["reference", "default"])
def test_recall_days_are_days_in_the_configured_timezone(tmp_path: Path, profile: str) -> None:
    assert _days(tmp_path, profile, None) == ["2026-11-30"]  # UTC until set
    assert _days(tmp_path, profile, "Asia/Tokyo") == ["2026-12-01"]
    assert _days(tmp_path, profile, "America/New_York") == ["2026-11-30"]


def test_an_unknown_timezone_is_one_line(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    with MemoryIndex.open(ws, provider="none") as idx:
        with pytest.raises(pr.PromotionError, match="unknown time zone 'Mars/Olympus'"):
            pr.set_timezone(idx, "Mars/Olympus")
    assert main(["promote", "--workspace", str(ws), "--provider", "none",
                 "--timezone", "Mars/Olympus"]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown time zone" in err and len(err.splitlines()) == 1
    assert main(["promote", "--workspace", str(ws), "--provider", "none",
                 "--timezone", "Europe/Berlin", "--json"]) == 0
    with MemoryIndex.open(ws, provider="none") as idx, pr.state_of(idx) as st:
        assert st.timezone() == "Europe/Berlin"


def test_the_timezone_of_an_openclaw_config() -> None:
    dreaming = {"plugins": {"entries": {"memory-core": {"config": {"dreaming": {
        "timezone": "Asia/Tokyo"}}}}}}
    user = {"agents": {"defaults": {"userTimezone": "Europe/Berlin"}}}
    assert dreaming_timezone(dreaming) == "Asia/Tokyo"
    assert dreaming_timezone(user) == "Europe/Berlin"
    assert dreaming_timezone({**user, **dreaming}) == "Asia/Tokyo"  # dreaming's own first
    assert dreaming_timezone({}) is None


def test_dream_on_an_openclaw_home_takes_its_timezone(tmp_path: Path) -> None:
    import json

    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "memory" / "2026-11-29.md").write_text("# 2026-11-29\n\nThe ferry leaves at nine.\n",
                                                 encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {
        "workspace": str(ws), "userTimezone": "Asia/Tokyo"}}}), encoding="utf-8")
    assert main(["dream", "--openclaw-home", str(home), "--provider", "none", "--json"]) == 0
    with MemoryIndex.open(ws, provider="none") as idx, pr.state_of(idx) as st:
        assert st.timezone() == "Asia/Tokyo"
